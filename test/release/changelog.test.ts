import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  linkLines,
  parseChangelog,
  releasedVersions,
  repositoryUrl,
} from '../../scripts/changelog.ts';
import { fileAt, releaseCommits, tagged } from '../support/release-history.ts';

/**
 * A release means one thing: its changelog section says, for ever, what it said in its release
 * commit (a later change goes under [Unreleased], for the next release), and the commit set the
 * version to exactly its number. Release commits are found by their subject, `Release X.Y.Z`, in
 * the whole history (a shallow clone fails, saying so). Keep a Changelog's link lines follow the
 * headings, made from the root package.json's `repository` (docs/releasing.md).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFile(join(ROOT, path), 'utf8');

describe('the released changelog sections', () => {
  it('are each the release commit of a version, and each release commit has one', async () => {
    const changelog = parseChangelog(await read('CHANGELOG.md'));
    const commits = releaseCommits(ROOT);
    expect(commits.length, 'no "Release X.Y.Z" commit in the history').toBeGreaterThan(0);
    expect(releasedVersions(changelog)).toEqual(commits.map((each) => each.version));
  });

  it('read exactly as they did in their release commits', async () => {
    const now = parseChangelog(await read('CHANGELOG.md'));
    for (const { version, commit } of releaseCommits(ROOT)) {
      const then = parseChangelog(fileAt(ROOT, commit, 'CHANGELOG.md'));
      const released = then.sections.find((section) => section.name === version);
      expect(released, `${commit} has no section for ${version}`).toBeDefined();
      expect(
        now.sections.find((section) => section.name === version)?.text,
        `[${version}] was rewritten after its release commit ${commit.slice(0, 7)}: restore its text and put what changed since under [Unreleased]`,
      ).toBe(released?.text);
    }
  });

  it('were released with the version set to exactly their number, and tagged there if at all', () => {
    for (const { version, commit } of releaseCommits(ROOT)) {
      const manifest = JSON.parse(fileAt(ROOT, commit, 'package.json')) as { version: string };
      expect(manifest.version, commit).toBe(version);
      const tag = tagged(ROOT, `v${version}`);
      if (tag !== undefined) expect(tag, `the tag v${version}`).toBe(commit);
    }
  });
});

describe("the changelog's link lines", () => {
  it('are one per heading, from the repository in package.json, in Keep a Changelog form', async () => {
    const manifest = JSON.parse(await read('package.json')) as { repository?: unknown };
    const repository = repositoryUrl(manifest);
    const changelog = parseChangelog(await read('CHANGELOG.md'));
    const headings = changelog.sections.map((section) => section.name);
    expect(headings[0]).toBe('Unreleased');
    expect([...changelog.links.keys()]).toEqual(headings);
    const expected = linkLines(repository, releasedVersions(changelog));
    expect([...changelog.links].map(([name, url]) => `[${name}]: ${url}`)).toEqual(expected);
    // The file ends with them.
    expect((await read('CHANGELOG.md')).endsWith(`${expected.join('\n')}\n`)).toBe(true);
  });
});

describe('reading the releases from git', () => {
  it('refuses a shallow clone, saying how to get the whole history', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'baton-shallow-'));
    try {
      execFileSync('git', ['clone', '--quiet', '--depth', '1', `file://${ROOT}`, 'clone'], {
        cwd: parent,
        stdio: 'ignore',
      });
      expect(() => releaseCommits(join(parent, 'clone'))).toThrow(
        /is a shallow clone: .*git fetch --unshallow/,
      );
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});
