import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseChangelog, releasedVersions } from '../../scripts/changelog.ts';
import { compareCores, parseVersion } from '../../scripts/version.ts';

/**
 * One version for the whole workspace, in every place that carries it (docs/releasing.md): the
 * root package.json's, `X.Y.Z` in a release commit and the next version's `X.Y.Z-dev` between
 * releases, so that nothing built after a release says it is that release. What a build reports
 * (that version, and `+<short revision>` after a pre-release) is checked on the release folder
 * (bundle.test.ts), the deployable folder (bundle.test.ts too) and the image (test/image/); the
 * Kubernetes manifests' image tag and version label on the rendered objects (test/kubernetes/).
 */
const read = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');

async function workspaceVersions(): Promise<Record<string, string | undefined>> {
  const { packages } = parse(await read('pnpm-workspace.yaml')) as { packages: string[] };
  const versions: Record<string, string | undefined> = {};
  for (const folder of ['.', ...packages]) {
    const manifest = JSON.parse(await read(`${folder}/package.json`)) as { version?: string };
    versions[`${folder}/package.json`] = manifest.version;
  }
  return versions;
}

const rootVersion = async (): Promise<string> =>
  (JSON.parse(await read('package.json')) as { version: string }).version;

describe('the version', () => {
  it('is one semantic version, in every package.json of the workspace and the OpenAPI document', async () => {
    const versions = await workspaceVersions();
    expect(Object.keys(versions).length).toBeGreaterThanOrEqual(6);
    const root = versions['./package.json'];
    expect(parseVersion(root ?? ''), `${root} is X.Y.Z or X.Y.Z-pre`).not.toBeNull();
    for (const [file, version] of Object.entries(versions)) expect(version, file).toBe(root);
    const openapi = JSON.parse(await read('docs/openapi.json')) as { info: { version: string } };
    expect(openapi.info.version, 'docs/openapi.json').toBe(root);
  });

  it('is not a released one while [Unreleased] lists changes: the next version, `-dev`', async () => {
    const version = await rootVersion();
    const changelog = parseChangelog(await read('CHANGELOG.md'));
    const unreleased = changelog.sections.find((section) => section.name === 'Unreleased');
    expect(unreleased, 'a "## [Unreleased]" section').toBeDefined();
    const parsed = parseVersion(version)!;
    const [latest] = releasedVersions(changelog);
    if (unreleased!.body !== '')
      expect(
        parsed.prerelease,
        `[Unreleased] lists changes, so ${version} is not what HEAD is: between releases the version is the next one's X.Y.Z-dev (pnpm release:next)`,
      ).toBe('dev');
    if (parsed.prerelease === undefined) {
      // A release commit: the changelog's latest release, [Unreleased] empty.
      expect(version).toBe(latest);
    } else {
      expect(parsed.prerelease).toBe('dev');
      if (latest !== undefined)
        expect(
          compareCores(parsed, parseVersion(latest)!),
          `${version} comes after ${latest}`,
        ).toBeGreaterThan(0);
    }
  });

  it("has the changelog in Keep a Changelog's form, newest release first", async () => {
    const changelog = parseChangelog(await read('CHANGELOG.md'));
    expect(changelog.sections[0]?.name).toBe('Unreleased');
    const released = changelog.sections.slice(1);
    for (const section of released) {
      expect(parseVersion(section.name)?.prerelease, section.name).toBeUndefined();
      expect(section.date, section.name).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    released.slice(1).forEach((older, index) => {
      const newer = released[index]!;
      expect(
        compareCores(parseVersion(newer.name)!, parseVersion(older.name)!),
        `${newer.name} is listed above ${older.name}`,
      ).toBeGreaterThan(0);
    });
    // Only the format's kinds of change.
    for (const [, kind] of (await read('CHANGELOG.md')).matchAll(/^### (.+)$/gm))
      expect(['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security']).toContain(kind);
  });
});
