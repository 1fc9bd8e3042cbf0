import { createMemoryStore } from './memory.ts';
import { storeContract } from './store.contract.ts';

storeContract('memory', () => {
  let now = 1_000_000;
  return {
    store: createMemoryStore(() => now),
    advance: async (ms) => {
      now += ms;
    },
  };
});
