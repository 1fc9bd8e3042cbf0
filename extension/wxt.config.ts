import { defineConfig } from 'wxt';

export default defineConfig({
  modules: ['@wxt-dev/webextension-polyfill'],
  manifest: {
    name: 'Baton',
  },
});
