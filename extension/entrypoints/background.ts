import { startBackground } from '../src/background/main.ts';

export default defineBackground(() => {
  startBackground();
});
