import { defineConfig } from 'vitest/config';
import { WxtVitest } from 'wxt/testing/vitest-plugin';

export default defineConfig({
  plugins: [WxtVitest({ root: import.meta.dirname })],
  test: {
    name: 'unit:extension',
    root: import.meta.dirname,
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '.output/**', '.wxt/**'],
  },
});
