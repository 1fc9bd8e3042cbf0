import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * One version for the whole workspace, in every place that carries it, and a changelog whose
 * latest release is that version (CHANGELOG.md; docs/operations.md, "Releases"). The extension's
 * manifest takes the version from its package.json (WXT), which `pnpm --filter @baton/extension
 * release` checks in the store zips; the Kubernetes manifests' image tag and version label are
 * checked on the rendered objects (test/kubernetes/).
 */
const read = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/;

async function workspaceVersions(): Promise<Record<string, string | undefined>> {
  const { packages } = parse(await read('pnpm-workspace.yaml')) as { packages: string[] };
  const versions: Record<string, string | undefined> = {};
  for (const folder of ['.', ...packages]) {
    const manifest = JSON.parse(await read(`${folder}/package.json`)) as { version?: string };
    versions[`${folder}/package.json`] = manifest.version;
  }
  return versions;
}

describe('the release version', () => {
  it('is one semantic version, in every package.json of the workspace', async () => {
    const versions = await workspaceVersions();
    expect(Object.keys(versions).length).toBeGreaterThanOrEqual(6);
    const root = versions['./package.json'];
    expect(root).toMatch(SEMVER);
    for (const [file, version] of Object.entries(versions)) expect(version, file).toBe(root);
  });

  it("is the changelog's latest release, in Keep a Changelog's form", async () => {
    const { version } = JSON.parse(await read('package.json')) as { version: string };
    const changelog = await read('CHANGELOG.md');
    const headings = [...changelog.matchAll(/^## (.+)$/gm)].map((found) => found[1]);
    expect(headings[0]).toBe('[Unreleased]');
    expect(headings[1]).toMatch(
      new RegExp(`^\\[${version.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`),
    );
    for (const heading of headings.slice(1))
      expect(heading, 'a release heading').toMatch(/^\[[^\]]+\] - \d{4}-\d{2}-\d{2}$/);
    // Only the format's kinds of change.
    for (const [, kind] of changelog.matchAll(/^### (.+)$/gm))
      expect(['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security']).toContain(kind);
  });
});
