import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eBuildEnv } from './global-setup.ts';

/**
 * The integrator's own build (docs/extending.md): a fork of extension/ that adds a content script
 * of its own (entrypoints/app.content.ts: the guide's example, on https://app.example.com, with
 * WXT's auto-imported defineContentScript) still builds as development (`scripts/baton start`, .ci/run's verify
 * step), as the end-to-end tests build it (global-setup.ts), and as .ci/run's release step builds
 * it with its example variables, once WXT_API_ORIGINS lists its origin. Without it, the build
 * fails saying which variable to set, to what, and how.
 *
 * The fork is a copy of extension/ (its sources, not its node_modules, .output or .wxt), with the
 * root files wxt.config.ts reads (package.json, tsconfig.base.json, scripts/version.ts), made
 * under extension/.output/ (git-ignored; the builds' own .output stays inside the fork), so that
 * the workspace's node_modules resolve as they do for extension/ itself. WXT runs directly: never
 * pnpm in the fork, which would take it for a workspace and relink node_modules.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const wxt = join(root, 'extension/node_modules/wxt/bin/wxt.mjs');
const APP = 'https://app.example.com';
const LOCAL = ['http://localhost', 'http://127.0.0.1'];
/** The variables of .ci/run's release step. */
const CI_RELEASE = {
  WXT_BROKER_URL: 'https://broker.example.com',
  WXT_GECKO_ID: 'baton@example.com',
  BATON_RELEASE: '1',
};

/**
 * The integrator's content script: the example of docs/extending.md ("Adding a content script"),
 * as written there, on https://app.example.com, with WXT's auto-imported defineContentScript.
 */
async function integratorScript(): Promise<string> {
  const guide = await readFile(join(root, 'docs/extending.md'), 'utf8');
  const section = guide.split(/^## Adding a content script$/m)[1] ?? '';
  const block = /^( *)```ts\n([\s\S]*?)^\1```$/m.exec(section);
  if (block === null) throw new Error('no ts example under "Adding a content script"');
  const [, indent = '', code = ''] = block;
  const script = code.replace(new RegExp(`^${indent}`, 'gm'), '');
  expect(script).toContain(`matches: ['${APP}/*']`);
  expect(script).not.toMatch(/import \{ defineContentScript/);
  return script;
}

let fork = '';
let extension = '';

beforeAll(async () => {
  const forks = join(root, 'extension/.output');
  await mkdir(forks, { recursive: true });
  fork = await mkdtemp(join(forks, 'integrator-fork-'));
  extension = join(fork, 'extension');
  const skipped = new Set(['node_modules', '.output', '.wxt']);
  for (const entry of await readdir(join(root, 'extension')))
    if (!skipped.has(entry))
      await cp(join(root, 'extension', entry), join(extension, entry), { recursive: true });
  for (const file of ['package.json', 'tsconfig.base.json', 'scripts/version.ts'])
    await cp(join(root, file), join(fork, file));
  await writeFile(join(extension, 'entrypoints/app.content.ts'), await integratorScript());
});

afterAll(async () => {
  if (fork !== '') await rm(fork, { recursive: true, force: true });
});

/** Only what a build of this test sets: none of the caller's WXT_* or BATON_* variables. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(WXT|BATON)_/.test(name)),
  );
}

interface Built {
  ok: boolean;
  output: string;
  manifest: { content_scripts?: { matches?: string[]; js?: string[] }[] };
  background: string;
}

/** `wxt build` (Chrome) in the fork: its manifest and background, or its output when it fails. */
async function build(env: NodeJS.ProcessEnv): Promise<Built> {
  let output: string;
  try {
    const done = await promisify(execFile)(process.execPath, [wxt, 'build'], {
      cwd: extension,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    output = done.stdout + done.stderr;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return {
      ok: false,
      output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
      manifest: {},
      background: '',
    };
  }
  const dir = join(extension, '.output/chrome-mv3');
  const manifest = JSON.parse(
    await readFile(join(dir, 'manifest.json'), 'utf8'),
  ) as Built['manifest'];
  const background = await readFile(join(dir, 'background.js'), 'utf8');
  await rm(dir, { recursive: true, force: true });
  return { ok: true, output, manifest, background };
}

const scriptsOf = (built: Built) =>
  (built.manifest.content_scripts ?? []).map((script) => [script.js, script.matches]);
/** Whether background.js holds exactly this list as the one it answers (WXT_API_ORIGINS, as built). */
const lists = (built: Built, origins: readonly string[]) =>
  new RegExp(`[\`'"]${origins.join(',').replaceAll('.', '\\.')}[\`'"]`).test(built.background);

describe('a fork with a content script of its own on https://app.example.com', () => {
  it('builds for development with WXT_API_ORIGINS, which the build adds the local origins to', async () => {
    const built = await build({ ...cleanEnv(), WXT_API_ORIGINS: APP });

    expect(built.ok, built.output).toBe(true);
    expect(scriptsOf(built)).toEqual([[['content-scripts/app.js'], [`${APP}/*`]]]);
    expect(lists(built, [APP, ...LOCAL])).toBe(true);
  });

  it('fails for development without WXT_API_ORIGINS, saying what to set and how', async () => {
    const built = await build(cleanEnv());

    expect(built.ok).toBe(false);
    expect(built.output).toContain(`${APP}/* (content-scripts/app.js)`);
    expect(built.output).toContain(`WXT_API_ORIGINS=${APP} bash scripts/baton start`);
  });

  it('builds as the end-to-end tests build it: their origin added to the integrator’s', async () => {
    const built = await build(e2eBuildEnv(8787, { ...cleanEnv(), WXT_API_ORIGINS: APP }));

    expect(built.ok, built.output).toBe(true);
    expect(scriptsOf(built)).toEqual(
      expect.arrayContaining([
        [['content-scripts/app.js'], [`${APP}/*`]],
        [['content-scripts/baton-e2e-api-probe.js'], expect.any(Array)],
      ]),
    );
    expect(lists(built, [APP, 'http://127.0.0.1', 'http://localhost'])).toBe(true);
  });

  it('builds as .ci/run’s release step does (example variables), given WXT_API_ORIGINS: https only, no local origin', async () => {
    const built = await build({ ...cleanEnv(), ...CI_RELEASE, WXT_API_ORIGINS: APP });

    expect(built.ok, built.output).toBe(true);
    expect(scriptsOf(built)).toEqual([[['content-scripts/app.js'], [`${APP}/*`]]]);
    expect(lists(built, [APP])).toBe(true);
    expect(built.background.includes('http://localhost')).toBe(false);
  });

  it('refuses a release build without WXT_API_ORIGINS, naming the variable, its value and the command', async () => {
    const built = await build({ ...cleanEnv(), ...CI_RELEASE });

    expect(built.ok).toBe(false);
    expect(built.output).toContain(`${APP}/* (content-scripts/app.js)`);
    expect(built.output).toContain(`WXT_API_ORIGINS=${APP} pnpm --filter @baton/extension release`);
  });
});
