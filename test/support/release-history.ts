import { execFileSync } from 'node:child_process';

/**
 * The releases as git history records them: a release commit is one whose subject starts with
 * `Release X.Y.Z` (docs/releasing.md). Commit messages, not tags: a clone need not carry tags, and
 * nothing here creates any. A tag `vX.Y.Z`, where there is one, must name the same commit.
 */
export interface ReleaseCommit {
  version: string;
  commit: string;
}

const RELEASE_SUBJECT = /^Release (\d+\.\d+\.\d+)(?=$|[:\s])/;

export function git(root: string, args: string[]): string {
  return execFileSync('git', args, {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Every release commit reachable from HEAD, newest first. Throws on a shallow clone, whose history
 * stops short of the releases (CI must clone with the whole history), and on two commits that
 * claim one version.
 */
export function releaseCommits(root: string): ReleaseCommit[] {
  if (git(root, ['rev-parse', '--is-shallow-repository']).trim() === 'true')
    throw new Error(
      `${root} is a shallow clone: the release checks read every release commit. Fetch the whole history (git fetch --unshallow), or clone without --depth.`,
    );
  const found: ReleaseCommit[] = [];
  for (const line of git(root, ['log', '--format=%H %s', 'HEAD']).split('\n')) {
    const space = line.indexOf(' ');
    const version = RELEASE_SUBJECT.exec(line.slice(space + 1))?.[1];
    if (version === undefined) continue;
    const commit = line.slice(0, space);
    const twin = found.find((each) => each.version === version);
    if (twin !== undefined)
      throw new Error(`two release commits for ${version}: ${twin.commit} and ${commit}`);
    found.push({ version, commit });
  }
  return found;
}

/** A file as a commit had it. */
export const fileAt = (root: string, commit: string, path: string): string =>
  git(root, ['show', `${commit}:${path}`]);

/** The commit a tag names, or undefined when there is no such tag. */
export function tagged(root: string, tag: string): string | undefined {
  try {
    return git(root, ['rev-parse', '--verify', '--quiet', `refs/tags/${tag}^{commit}`]).trim();
  } catch {
    return undefined;
  }
}
