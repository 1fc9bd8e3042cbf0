// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Libraries of the HTTP layer: Express and its middleware. */
const HTTP_LIBRARIES = [
  'express',
  'express-session',
  'express-rate-limit',
  'helmet',
  'connect-redis',
  'rate-limit-redis',
];

/**
 * The layers of the broker and of the extension, one table (docs/architecture.md, "Module map",
 * says the same in prose). Each folder of `src/` lists the folders it may import, and why the
 * others are off limits; a folder may always import itself, and tests may cross layers. The
 * broker's root holds only entry points and composition (main.ts, admin.ts, compose.ts,
 * index.ts), which no folder imports; the extension's root holds the small modules every part
 * shares (messaging, problems, the broker URL, the managed settings...).
 * @type {Record<string, { src: string, rootModules: 'forbidden' | 'allowed', folders: Record<string, { mayImport: string[], because: string }> }>}
 */
const LAYERS = {
  server: {
    src: 'server/src',
    rootModules: 'forbidden',
    folders: {
      base: {
        mayImport: [],
        because:
          'base/ is the bottom: errors, sealing, tracing and bounded maps need nothing of ours.',
      },
      store: {
        mayImport: ['base'],
        because: 'store/ sits just above base/: any store can be tested alone.',
      },
      oauth: {
        mayImport: ['store', 'base'],
        because: 'oauth/ knows the store, not the connections, operations or routes above it.',
      },
      connections: {
        mayImport: ['oauth', 'store', 'base'],
        because:
          'connections/ is the domain: metrics, events delivery and routes watch it from above, never the reverse (its events port is connections/events.ts).',
      },
      ops: {
        mayImport: ['connections', 'oauth', 'store', 'base'],
        because:
          'ops/ sits below config/ and http/: the HTTP side of an operation belongs in http/.',
      },
      admin: {
        mayImport: ['ops', 'connections', 'oauth', 'store', 'base'],
        because:
          'admin/ holds the use cases of operators over the layers below; the admin API (http/admin/) and the command line (admin.ts) call them.',
      },
      config: {
        mayImport: ['ops', 'connections', 'oauth', 'store', 'base'],
        because: 'config/ parses the environment into the values of the layers below it.',
      },
      http: {
        mayImport: ['config', 'admin', 'ops', 'connections', 'oauth', 'store', 'base'],
        because: 'http/ is the top folder: it imports the layers, and the root composes it.',
      },
    },
  },
  extension: {
    src: 'extension/src',
    rootModules: 'allowed',
    folders: {
      state: {
        mayImport: [],
        because: 'state/ (what is stored, and the view) is below the background and the UI.',
      },
      present: {
        mayImport: [],
        because: 'present/ (how license data reads) is below the background and the UI.',
      },
      background: {
        mayImport: ['state', 'present'],
        because: 'The background never reaches into the UI: it answers messages.',
      },
      ui: {
        mayImport: ['state', 'present'],
        because:
          'The popup and options page talk to the background only through messages (messaging.ts), never by importing it.',
      },
      testing: {
        mayImport: ['background', 'state', 'present'],
        because: 'testing/ builds the background for tests; the UI has its own.',
      },
    },
  },
};

/**
 * One ESLint config per folder of a LAYERS entry: `no-restricted-imports` patterns for every folder
 * (and, for the broker, the root modules) it may not import, with the reason. ESLint keeps only
 * the last no-restricted-imports that applies to a file, so each config also carries `always`
 * (the package-wide bans).
 * @param {keyof typeof LAYERS} name
 * @param {{ group: string[], message: string }[]} always
 */
function layerConfigs(name, always) {
  const { src, rootModules, folders } = LAYERS[name];
  const rootFiles =
    rootModules === 'forbidden'
      ? ['**/main.ts', '**/admin.ts', '**/compose.ts', '**/index.ts']
      : [];
  return Object.entries(folders).map(([folder, { mayImport, because }]) => {
    const off = Object.keys(folders).filter(
      (other) => other !== folder && !mayImport.includes(other),
    );
    const group = [...off.flatMap((other) => [`**/${other}/**`, `**/${other}`]), ...rootFiles];
    return {
      files: [`${src}/${folder}/**`],
      ignores: ['**/*.test.ts', '**/*.contract.ts'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              ...always,
              ...(group.length > 0 ? [{ group, message: `${src}/${folder}/: ${because}` }] : []),
            ],
          },
        ],
      },
    };
  });
}

/** What the broker never imports, anywhere: the extension; and outside http/, Express. */
const BROKER_ALWAYS = [
  {
    group: ['@baton/extension', '@baton/extension/*', '**/extension/**', '**/extension'],
    message: 'The broker must not depend on the extension: put shared contracts in @baton/shared.',
  },
];
const NO_HTTP = {
  group: HTTP_LIBRARIES,
  message:
    'Only server/src/http/ speaks HTTP through Express and its middleware: pass plain values and functions down, not requests.',
};

/** What the extension never imports: the broker. */
const EXTENSION_ALWAYS = [
  {
    group: ['@baton/server', '@baton/server/*', '**/server/**', '**/server'],
    message:
      'The extension talks to the broker over HTTP only: put shared contracts in @baton/shared.',
  },
];

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
      'test/soak/results/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
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
    rules: { 'no-restricted-imports': ['error', { patterns: EXTENSION_ALWAYS }] },
  },
  ...layerConfigs('extension', EXTENSION_ALWAYS),
  {
    // The broker's entry points and composition, and every folder below but http/: no Express.
    files: ['server/**'],
    ignores: ['server/src/http/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [...BROKER_ALWAYS, NO_HTTP] }] },
  },
  {
    files: ['server/src/http/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: BROKER_ALWAYS }] },
  },
  ...layerConfigs('server', BROKER_ALWAYS).map((config) =>
    config.files[0] === 'server/src/http/**'
      ? config
      : {
          ...config,
          rules: {
            'no-restricted-imports': [
              'error',
              {
                patterns: [...config.rules['no-restricted-imports'][1].patterns, NO_HTTP],
              },
            ],
          },
        },
  ),
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
