import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { generateSbom, keepSbom, packages, schemaErrors } from '../support/sbom.ts';
import { docker, IMAGE, ROOT } from './docker.ts';

/**
 * The image says what it is: the OCI labels from its build arguments, the build's own record in
 * /app/dist/build-info.json, and an SBOM (CycloneDX, by cdxgen) of its whole filesystem, exported
 * from a container: every Debian package dpkg knows in it and every npm package of the broker,
 * valid by the CycloneDX schema, kept in test-results/sbom/ for a release to publish.
 */

/** What the suite's image was built from (its global setup). */
const BUILD_ARGS = inject('imageBuildArgs');
let rootfs: string;

beforeAll(async () => {
  rootfs = await mkdtemp(join(tmpdir(), 'baton-image-rootfs-'));
  const container = await docker(['create', IMAGE]);
  try {
    await promisify(execFile)(
      'sh',
      ['-c', `docker export "${container}" | tar -C "${rootfs}" -x --no-same-owner`],
      { timeout: 300_000 },
    );
  } finally {
    await docker(['rm', container]);
  }
});

afterAll(async () => {
  if (rootfs !== undefined) await rm(rootfs, { recursive: true, force: true });
});

describe('the image of a release', () => {
  it('carries its version, revision and source in its OCI labels, and in the build', async () => {
    const labels = JSON.parse(
      await docker(['image', 'inspect', '--format', '{{json .Config.Labels}}', IMAGE]),
    ) as Record<string, string>;
    expect(labels).toMatchObject({
      'org.opencontainers.image.version': BUILD_ARGS.VERSION,
      'org.opencontainers.image.revision': BUILD_ARGS.REVISION,
      'org.opencontainers.image.source': BUILD_ARGS.SOURCE,
      'org.opencontainers.image.title': 'baton-broker',
    });
    const info = JSON.parse(await readFile(join(rootfs, 'app/dist/build-info.json'), 'utf8'));
    expect(info).toEqual({ version: BUILD_ARGS.VERSION, revision: BUILD_ARGS.REVISION });
  });

  it('is not built with a version other than the workspace’s', async () => {
    const build = await docker(
      [
        'build',
        '--network',
        'host',
        '--pull=false',
        '--force-rm',
        '--build-arg',
        'VERSION=0.0.1',
        '--build-arg',
        `REVISION=${BUILD_ARGS.REVISION}`,
        '--build-arg',
        `SOURCE=${BUILD_ARGS.SOURCE}`,
        '-f',
        'server/Dockerfile',
        ROOT,
      ],
      { timeoutMs: 600_000, env: { DOCKER_BUILDKIT: '0' } },
    ).then(
      () => '',
      (error: Error) => error.message,
    );
    expect(build).toContain(`--build-arg VERSION=${BUILD_ARGS.VERSION} is required (given: 0.0.1)`);
  });

  it('has an SBOM of its Debian and npm packages, valid CycloneDX', async () => {
    const { bom, text } = await generateSbom('rootfs', rootfs);
    expect(await schemaErrors(text)).toBeNull();

    // What dpkg says is installed, asked inside the image.
    const dpkg = (
      await docker([
        'run',
        '--rm',
        '--network',
        'host',
        '--entrypoint',
        'dpkg-query',
        IMAGE,
        '--show',
      ])
    )
      .split('\n')
      .filter(Boolean)
      // `name:arch<TAB>version` for a multi-arch package: the SBOM names the package alone.
      .map((line) => line.replace(/(:[a-z0-9]+)?\t/, '@'));
    expect(dpkg.length).toBeGreaterThan(50);
    const debs = new Set(
      bom.components
        .filter((component) => component.purl?.startsWith('pkg:deb/'))
        .map((component) => `${component.name}@${component.version}`),
    );
    for (const installed of dpkg) expect(debs, installed).toContain(installed);

    // The broker's production dependencies, as its deployed lockfile in /app lists them.
    const lock = parse(await readFile(join(rootfs, 'app/pnpm-lock.yaml'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    const npm = packages(bom, 'npm');
    for (const key of Object.keys(lock.packages))
      expect(npm, key).toContain(key.replace(/\(.*$/, ''));

    await keepSbom(bom, 'image.cdx.json');
    // The scan of some 400 MB takes a minute or two on two cores.
  }, 600_000);
});
