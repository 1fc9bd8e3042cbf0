import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  buildVersion,
  manifestVersion,
  parseVersion,
  workspaceVersion,
} from '../../scripts/version.ts';
import { dockerTag, EXTENSION_VARIABLES } from '../../scripts/release.ts';
import { DeployedBroker } from '../support/deploy.ts';
import {
  declaredLicences,
  keepSbom,
  packages,
  schemaErrors,
  type Bom,
  type Component,
} from '../support/sbom.ts';
import { unzip } from '../support/zip.ts';

/**
 * `pnpm release` (scripts/release.ts) makes everything a release publishes in one folder, and
 * every piece of it reports one version, the build version: the workspace's, and `+<short
 * revision>` between releases. The deployable folder records it with the revision in
 * dist/build-info.json, which the running broker reports in baton_build_info; its SBOM (CycloneDX,
 * by cdxgen) lists exactly its production dependencies, each with the licence its package.json
 * declares. Run here without the image (`--no-image`: the image suite, test/image/, builds and
 * checks it; docs/releasing.md says how the whole run was checked), on this checkout's working tree
 * (`--allow-dirty`: a release itself refuses uncommitted changes).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts/release.ts');
const REVISION = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
const VERSION = workspaceVersion(ROOT);
const BUILD = buildVersion(VERSION, REVISION);
const STORE = { WXT_BROKER_URL: 'https://broker.example.com', WXT_GECKO_ID: 'baton@example.com' };
const server = JSON.parse(await readFile(join(ROOT, 'server/package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};

const run = promisify(execFile);
const release = (args: string[], env: NodeJS.ProcessEnv) =>
  run(process.execPath, [SCRIPT, ...args], { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024 });
const npmKey = (component: Component): string =>
  `${component.group ? `${component.group}/` : ''}${component.name}@${component.version}`;

let parent: string;
/** The release folder. */
let out: string;
/** Its deployable folder, unpacked. */
let deployed: string;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'baton-release-'));
  out = join(parent, 'release');
  await release(['--no-image', '--allow-dirty', '--out', out], { ...process.env, ...STORE });
  await run('tar', ['-xzf', join(out, `baton-broker-${BUILD}.tar.gz`)], { cwd: parent });
  deployed = join(parent, `baton-broker-${BUILD}`);
}, 600_000);

afterAll(async () => {
  if (parent !== undefined) await rm(parent, { recursive: true, force: true });
});

describe('pnpm release', () => {
  it('between releases, builds a pre-release that names its commit', () => {
    if (parseVersion(VERSION)?.prerelease !== undefined)
      expect(BUILD).toBe(`${VERSION}+${REVISION.slice(0, 7)}`);
    else expect(BUILD).toBe(VERSION);
  });

  it('tags the image with the build version, `+` as `-` (a Docker tag cannot hold `+`)', () => {
    expect(dockerTag('1.1.0-dev+abc1234')).toBe('1.1.0-dev-abc1234');
    expect(dockerTag('1.1.0')).toBe('1.1.0');
  });

  it('puts the store packages, the deployable folder, its SBOM and SHA256SUMS in one folder', async () => {
    expect((await readdir(out)).sort()).toEqual(
      [
        `baton-broker-${BUILD}.cdx.json`,
        `baton-broker-${BUILD}.tar.gz`,
        `baton-extension-${BUILD}-chrome.zip`,
        `baton-extension-${BUILD}-firefox.zip`,
        `baton-extension-${BUILD}-sources.zip`,
        'SHA256SUMS',
      ].sort(),
    );
  });

  it('has SHA256SUMS over every other file, as sha256sum checks it', async () => {
    const sums = await readFile(join(out, 'SHA256SUMS'), 'utf8');
    expect(
      sums
        .trim()
        .split('\n')
        .map((line) => line.slice(66)),
    ).toEqual((await readdir(out)).filter((file) => file !== 'SHA256SUMS').sort());
    const check = await run('sha256sum', ['--check', '--strict', 'SHA256SUMS'], { cwd: out });
    expect(check.stdout).not.toMatch(/FAILED/);
  });

  it('reports the build version in the extension: Chrome’s version_name, X.Y.Z as version', async () => {
    const manifest = async (kind: string) =>
      JSON.parse(
        unzip(await readFile(join(out, `baton-extension-${BUILD}-${kind}.zip`)))
          .get('manifest.json')!
          .toString('utf8'),
      ) as { version: string; version_name?: string };
    const chrome = await manifest('chrome');
    expect(chrome.version).toBe(manifestVersion(BUILD));
    expect(chrome.version_name).toBe(BUILD === chrome.version ? undefined : BUILD);
    const firefox = await manifest('firefox');
    expect(firefox.version).toBe(manifestVersion(BUILD));
    // Firefox has no version_name: there the zip's name carries the build version.
    expect(firefox.version_name).toBeUndefined();
    // A reviewer rebuilds from the sources: the version's module is in them.
    const sources = unzip(await readFile(join(out, `baton-extension-${BUILD}-sources.zip`)));
    expect([...sources.keys()]).toContain('scripts/version.ts');
  });
});

describe('pnpm release, without the store packages’ variables', () => {
  it('refuses before building anything, naming both', async () => {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !(EXTENSION_VARIABLES as readonly string[]).includes(name),
      ),
    );
    const failed = await release(['--no-image', '--out', join(parent, 'never')], env).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toMatch(/set WXT_BROKER_URL and WXT_GECKO_ID/);
    await expect(readdir(join(parent, 'never'))).rejects.toThrow(/ENOENT/);
  });
});

describe("the release's deployable folder", () => {
  it('records the build version and the commit it was built from, and the broker reports them', async () => {
    const info = JSON.parse(await readFile(join(deployed, 'dist/build-info.json'), 'utf8'));
    expect(info).toEqual({ version: BUILD, revision: REVISION });

    const METRICS_TOKEN = 'release-test-metrics-token-0123456789abcdef';
    await using broker = await DeployedBroker.start(deployed, { METRICS_TOKEN });
    const response = await fetch(`${broker.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(await response.text()).toMatch(
      new RegExp(
        `^baton_build_info\\{version="${BUILD.replace(/[.+]/g, '\\$&')}",revision="${REVISION}",nodejs_version="v\\d+\\.\\d+\\.\\d+"\\} 1$`,
        'm',
      ),
    );
  });

  it('is not built without a full commit hash to record', async () => {
    const build = await run(process.execPath, [join(ROOT, 'server/scripts/build.ts')], {
      env: { ...process.env, BATON_REVISION: 'main' },
    }).then(
      () => ({ code: 0, output: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, output: error.stderr }),
    );
    expect(build.code).not.toBe(0);
    expect(build.output).toContain('the revision must be a full commit hash (40 hex digits): main');
  });

  it('has an SBOM of exactly its production dependencies, of this build, valid CycloneDX', async () => {
    const text = await readFile(join(out, `baton-broker-${BUILD}.cdx.json`), 'utf8');
    expect(await schemaErrors(text)).toBeNull();
    const bom = JSON.parse(text) as Bom;
    expect(bom.metadata.component).toMatchObject({
      group: '@baton',
      name: 'server',
      version: BUILD,
      purl: `pkg:npm/%40baton/server@${encodeURIComponent(BUILD)}`,
    });
    // Every package the deployed lockfile installed, and nothing else.
    const lock = parse(await readFile(join(deployed, 'pnpm-lock.yaml'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    const installed = Object.keys(lock.packages).map((key) => key.replace(/\(.*$/, ''));
    expect(installed.length).toBeGreaterThan(100);
    expect([...packages(bom, 'npm')].sort()).toEqual([...new Set(installed)].sort());
    for (const name of Object.keys(server.devDependencies))
      expect(
        [...packages(bom, 'npm')].some((each) => each.startsWith(`${name}@`)),
        name,
      ).toBe(false);
    await keepSbom(bom, 'broker.cdx.json');
  });

  it('has each package in its SBOM with the licence its package.json declares', async () => {
    const bom = JSON.parse(
      await readFile(join(out, `baton-broker-${BUILD}.cdx.json`), 'utf8'),
    ) as Bom;
    const declared = await declaredLicences(deployed);
    const npm = bom.components.filter((component) => component.purl?.startsWith('pkg:npm/'));
    expect(npm.length).toBeGreaterThan(100);
    for (const component of npm) {
      const key = npmKey(component);
      expect(declared.has(key), `${key} is installed`).toBe(true);
      if (declared.get(key)!.length > 0)
        expect(component.licenses?.length ?? 0, `${key}: ${declared.get(key)}`).toBeGreaterThan(0);
    }
  });

  it("refuses a document the CycloneDX schema does not allow (the check's own check)", async () => {
    const broken: Bom = {
      bomFormat: 'CycloneDX',
      specVersion: '1.7',
      metadata: {},
      components: [{ type: 'no-such-type', name: 'x' }],
    };
    expect(await schemaErrors(JSON.stringify(broken))).not.toBeNull();
  });
});
