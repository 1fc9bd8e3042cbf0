// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Layering: shared/ is the only thing the extension and the broker have in common. */
const layer = (/** @type {string} */ forbidden, /** @type {string} */ message) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        { group: [`@baton/${forbidden}`, `@baton/${forbidden}/*`], message },
        { group: [`**/${forbidden}/**`, `**/${forbidden}`], message },
      ],
    },
  ],
});

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/.output/**',
      '**/.wxt/**',
      '**/dist/**',
      '**/coverage/**',
      'test-results/**',
      'bench-results/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  {
    // In tests a wrong assumption fails the test anyway; spelling out every narrowing adds noise.
    files: ['test/**', '**/*.test.ts', '**/*.contract.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    files: ['extension/**'],
    rules: layer(
      'server',
      'The extension talks to the broker over HTTP only: put shared contracts in @baton/shared.',
    ),
  },
  {
    files: ['server/**'],
    rules: layer(
      'extension',
      'The broker must not depend on the extension: put shared contracts in @baton/shared.',
    ),
  },
  {
    files: ['shared/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@baton/server', '@baton/extension', '**/server/**', '**/extension/**'],
              message: 'shared/ is a leaf package: it may not import the broker or the extension.',
            },
            {
              group: ['node:*'],
              message: 'shared/ runs in the browser too: no Node built-ins.',
            },
          ],
        },
      ],
    },
  },
);
