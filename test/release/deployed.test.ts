import { execFile, execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildDeployedFolder, DeployedBroker, type DeployedFolder } from '../support/deploy.ts';
import { generateSbom, keepSbom, packages, schemaErrors, type Bom } from '../support/sbom.ts';

/**
 * The deployable folder says what it is: the version and the git revision it was built from, in
 * dist/build-info.json and in the running broker's baton_build_info; and its SBOM (CycloneDX, by
 * cdxgen) lists exactly its production dependencies, valid by the CycloneDX schema. The SBOM is
 * kept in test-results/sbom/ for a release to publish.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REVISION = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
const server = JSON.parse(await readFile(join(ROOT, 'server/package.json'), 'utf8')) as {
  version: string;
  devDependencies: Record<string, string>;
};

let folder: DeployedFolder;

beforeAll(async () => {
  folder = await buildDeployedFolder();
});

afterAll(async () => {
  await folder?.[Symbol.asyncDispose]();
});

describe('the deployable folder', () => {
  it('records the version and the commit it was built from, and the broker reports them', async () => {
    const info = JSON.parse(await readFile(join(folder.dir, 'dist/build-info.json'), 'utf8'));
    expect(info).toEqual({ version: server.version, revision: REVISION });

    const METRICS_TOKEN = 'release-test-metrics-token-0123456789abcdef';
    await using broker = await DeployedBroker.start(folder.dir, { METRICS_TOKEN });
    const response = await fetch(`${broker.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(await response.text()).toMatch(
      new RegExp(
        `^baton_build_info\\{version="${server.version}",revision="${REVISION}",nodejs_version="v\\d+\\.\\d+\\.\\d+"\\} 1$`,
        'm',
      ),
    );
  });

  it('is not built without a full commit hash to record', async () => {
    const build = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'server/scripts/build.ts')],
      { env: { ...process.env, BATON_REVISION: 'main' } },
    ).then(
      () => ({ code: 0, output: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, output: error.stderr }),
    );
    expect(build.code).not.toBe(0);
    expect(build.output).toContain('the revision must be a full commit hash (40 hex digits): main');
  });

  it('has an SBOM of exactly its production dependencies, valid CycloneDX', async () => {
    const { bom, text } = await generateSbom('js', folder.dir);
    expect(await schemaErrors(text)).toBeNull();
    expect(bom.metadata.component).toMatchObject({
      group: '@baton',
      name: 'server',
      version: server.version,
    });
    // Every package the deployed lockfile installed, and nothing else.
    const lock = parse(await readFile(join(folder.dir, 'pnpm-lock.yaml'), 'utf8')) as {
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
