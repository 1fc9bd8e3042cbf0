import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseChangelog } from '../../scripts/changelog.ts';
import { cut, openNext } from '../../scripts/release-cut.ts';

const REPOSITORY = 'https://git.example.com/baton/baton';

/**
 * `pnpm release:cut X.Y.Z` and `pnpm release:next` (scripts/release-cut.ts), on a workspace made
 * here with every file that writes the version down, and a changelog in this repository's form
 * whose latest release is 1.0.0 (the repository's own moves on with every release).
 */
const CHANGELOG = `# Changelog

Every notable change to Baton. The format follows
[Keep a Changelog](https://keepachangelog.com/en/1.1.0/).

## [Unreleased]

### Added

- The admin API.

### Changed

- The data format.

## [1.0.0] - 2026-11-28

The first release.

### Added

- The broker.

[Unreleased]: ${REPOSITORY}/compare/v1.0.0...HEAD
[1.0.0]: ${REPOSITORY}/releases/tag/v1.0.0
`;

let root: string;

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}
const read = (path: string) => readFile(join(root, path), 'utf8');

async function workspaceAt(version: string, changelog = CHANGELOG): Promise<void> {
  await put(
    'package.json',
    `${JSON.stringify({ name: 'baton', version, repository: { type: 'git', url: `git+${REPOSITORY}.git` } }, null, 2)}\n`,
  );
  // Another list of names after `packages:` (the real file has one): not workspace folders.
  await put(
    'pnpm-workspace.yaml',
    "packages:\n  - server\n  - test/sandbox\n\npmOnFail: ignore\nignoredOptionalDependencies:\n  - '@appthreat/atom'\n",
  );
  for (const folder of ['server', 'test/sandbox'])
    await put(
      `${folder}/package.json`,
      `${JSON.stringify({ name: folder, version, dependencies: { x: '1.0.0' } }, null, 2)}\n`,
    );
  await put(
    'docs/openapi.json',
    `${JSON.stringify({ openapi: '3.1.1', info: { title: 'Baton broker', version }, paths: {} }, null, 2)}\n`,
  );
  await put(
    'docs/admin-openapi.json',
    `${JSON.stringify({ openapi: '3.1.1', info: { title: 'Baton admin API', version }, paths: {} }, null, 2)}\n`,
  );
  await put(
    'deploy/kubernetes/base/kustomization.yaml',
    `labels:\n  - pairs:\n      app.kubernetes.io/version: ${version}\n    includeSelectors: false\nimages:\n  - name: baton-broker\n    newTag: ${version}\n`,
  );
  await put('CHANGELOG.md', changelog);
}

async function versionsNow(): Promise<string[]> {
  const json = async (path: string, pick: (value: never) => string) =>
    pick(JSON.parse(await read(path)) as never);
  const kustomization = await read('deploy/kubernetes/base/kustomization.yaml');
  return [
    await json('package.json', (m: { version: string }) => m.version),
    await json('server/package.json', (m: { version: string }) => m.version),
    await json('test/sandbox/package.json', (m: { version: string }) => m.version),
    await json('docs/openapi.json', (m: { info: { version: string } }) => m.info.version),
    await json('docs/admin-openapi.json', (m: { info: { version: string } }) => m.info.version),
    /app\.kubernetes\.io\/version: (\S+)/.exec(kustomization)?.[1] ?? 'none',
    /newTag: (\S+)/.exec(kustomization)?.[1] ?? 'none',
  ];
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'baton-cut-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('pnpm release:cut', () => {
  it('releases what [Unreleased] holds, and sets the version everywhere', async () => {
    await workspaceAt('1.1.0-dev');
    const before = parseChangelog(CHANGELOG);
    await cut(root, '1.1.0', '2026-12-01');

    expect(await versionsNow()).toEqual(Array(7).fill('1.1.0'));
    const after = parseChangelog(await read('CHANGELOG.md'));
    expect(after.preamble).toBe(before.preamble);
    expect(after.sections.map((s) => [s.name, s.date])).toEqual([
      ['Unreleased', undefined],
      ['1.1.0', '2026-12-01'],
      ...before.sections.slice(1).map((s) => [s.name, s.date]),
    ]);
    expect(after.sections[0]?.body).toBe('');
    expect(after.sections[1]?.body).toBe(before.sections[0]?.body);
    // A released section is never touched.
    for (const section of before.sections.slice(1))
      expect(after.sections.find((s) => s.name === section.name)?.text).toBe(section.text);
    expect([...after.links]).toEqual([
      ['Unreleased', `${REPOSITORY}/compare/v1.1.0...HEAD`],
      ['1.1.0', `${REPOSITORY}/compare/v1.0.0...v1.1.0`],
      ['1.0.0', `${REPOSITORY}/releases/tag/v1.0.0`],
    ]);
  });

  it('then release:next opens the next minor, -dev, leaving the changelog', async () => {
    await workspaceAt('1.1.0-dev');
    await cut(root, '1.1.0', '2026-12-01');
    const released = await read('CHANGELOG.md');
    const opened = await openNext(root);
    expect(opened.version).toBe('1.2.0-dev');
    expect(await versionsNow()).toEqual(Array(7).fill('1.2.0-dev'));
    expect(await read('CHANGELOG.md')).toBe(released);
  });

  it('may release a major version instead, when the changes need one', async () => {
    await workspaceAt('1.1.0-dev');
    await cut(root, '2.0.0', '2026-12-01');
    expect(await versionsNow()).toEqual(Array(7).fill('2.0.0'));
  });

  it.each([
    ['1.1', 'a release is X.Y.Z'],
    ['1.1.0-rc.1', 'a release is X.Y.Z'],
    ['1.0.0', 'does not come after the latest release, 1.0.0'],
  ])('refuses %s, changing nothing', async (version, problem) => {
    await workspaceAt('1.1.0-dev');
    await expect(cut(root, version, '2026-12-01')).rejects.toThrow(problem);
    expect(await versionsNow()).toEqual(Array(7).fill('1.1.0-dev'));
    expect(await read('CHANGELOG.md')).toBe(CHANGELOG);
  });

  it('refuses when [Unreleased] is empty', async () => {
    const empty = CHANGELOG.replace(/## \[Unreleased\]\n[\s\S]*?(?=\n## \[)/, '## [Unreleased]\n');
    await workspaceAt('1.1.0-dev', empty);
    await expect(cut(root, '1.1.0', '2026-12-01')).rejects.toThrow('[Unreleased] is empty');
  });

  it('refuses when a place does not hold the version, naming it, and changes nothing', async () => {
    await workspaceAt('1.1.0-dev');
    await put('docs/openapi.json', '{\n  "info": {\n    "version": "0.9.0"\n  }\n}\n');
    await expect(cut(root, '1.1.0', '2026-12-01')).rejects.toThrow(/docs\/openapi\.json/);
    expect(JSON.parse(await read('package.json')).version).toBe('1.1.0-dev');
    expect(await read('CHANGELOG.md')).toBe(CHANGELOG);
  });

  it('refuses from a release: release:next comes first', async () => {
    await workspaceAt('1.0.0');
    await expect(cut(root, '1.1.0', '2026-12-01')).rejects.toThrow('pnpm release:next');
  });
});

describe('pnpm release:next', () => {
  it('refuses before the release commit', async () => {
    await workspaceAt('1.1.0-dev');
    await expect(openNext(root)).rejects.toThrow('run this after the release commit');
  });
});
