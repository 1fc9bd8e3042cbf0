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

/** Libraries of the HTTP layer: Express and its middleware. */
const HTTP_LIBRARIES = [
  'express',
  'express-session',
  'express-rate-limit',
  'helmet',
  'connect-redis',
  'rate-limit-redis',
];

/** @type {[string[], string]} */
const NO_HTTP = [
  HTTP_LIBRARIES,
  'Only server/src/http/ speaks HTTP through Express and its middleware: pass plain values and functions down, not requests.',
];

/**
 * One config per rule: each adds its groups to the broker-wide ban on @baton/extension (ESLint
 * keeps only the last no-restricted-imports that applies to a file, so each repeats it).
 * @param {{ files: string[], ignores?: string[], groups: [string[], string][] }[]} rules
 */
function brokerLayers(rules) {
  const extension = layer('extension', 'The broker must not depend on the extension.')[
    'no-restricted-imports'
  ][1].patterns;
  return rules.map(({ files, ignores = [], groups }) => ({
    // ESLint keeps one no-restricted-imports per file: every rule outside http/ carries the
    // HTTP libraries' ban too.
    files,
    ignores: [...ignores, '**/*.test.ts', '**/*.contract.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...extension,
            ...[...groups, NO_HTTP].map(([group, message]) => ({ group, message })),
          ],
        },
      ],
    },
  }));
}

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
  // The broker's own layers (docs/architecture.md, "Module map"): store at the bottom, then oauth
  // and connections, then ops, with http on top. Tests may cross them.
  ...brokerLayers([
    // The entry points and the root modules (config, errors, crypto): no Express either.
    { files: ['server/src/*.ts'], groups: [] },
    {
      files: ['server/src/store/*.ts'],
      groups: [
        [
          ['../*'],
          'server/src/store/ is the bottom layer: it imports nothing above it, so any store can be tested alone.',
        ],
      ],
    },
    {
      files: ['server/src/store/redis/**'],
      groups: [
        [
          ['../../*'],
          'server/src/store/ is the bottom layer: it imports nothing above it, so any store can be tested alone.',
        ],
      ],
    },
    {
      files: ['server/src/oauth/**', 'server/src/connections/**'],
      groups: [
        [
          ['**/http/**', '**/http/*'],
          'OAuth and connections know nothing of HTTP routes: http/ calls them, never the reverse.',
        ],
        [
          ['**/ops/**', '!**/ops/events.ts'],
          'Only the EventSink port of ops/events.ts may be used below ops/: metrics, logs and shutdown watch the lower layers, not the reverse.',
        ],
      ],
    },
    {
      files: ['server/src/ops/**'],
      groups: [
        [
          ['**/http/**', '**/http/*'],
          'ops/ sits below http/: the HTTP side of an operation (a route) belongs in http/.',
        ],
      ],
    },
  ]),
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
