/**
 * The version: one for the whole workspace, in the root package.json (docs/releasing.md). A release
 * commit sets it to `X.Y.Z` exactly; between releases it is the next version's pre-release,
 * `X.Y.Z-dev`. What a build reports (dist/build-info.json and `baton_build_info`, the image's
 * `org.opencontainers.image.version`, the extension's `version_name`, the release folder's names)
 * is the build version: a release's `X.Y.Z` as it is, a pre-release with the commit it was built
 * from as build metadata, `X.Y.Z-dev+<first 7 hex digits>`. No dependencies, plain Node: the
 * broker's build imports it inside the image build too (server/Dockerfile), and the extension's
 * wxt.config.ts.
 *
 *   node scripts/version.ts              the build version of this checkout (BATON_REVISION or HEAD)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Semantic Versioning 2.0.0's grammar, its build metadata aside. */
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?$/;

export interface Version {
  major: number;
  minor: number;
  patch: number;
  /** What follows `-` (`dev`), or undefined for a release. */
  prerelease: string | undefined;
}

/** `X.Y.Z` or `X.Y.Z-pre`; null for anything else (build metadata included). */
export function parseVersion(text: string): Version | null {
  const found = SEMVER.exec(text);
  if (found === null) return null;
  return {
    major: Number(found[1]),
    minor: Number(found[2]),
    patch: Number(found[3]),
    prerelease: found[4],
  };
}

/** `X.Y.Z`: the release a version is, or leads to. */
export const coreOf = (version: Version): string =>
  `${version.major}.${version.minor}.${version.patch}`;

/**
 * What a browser extension's manifest `version` holds of a build version (1 to 4 integers only):
 * its X.Y.Z; the whole of it goes to Chrome's `version_name`.
 */
export function manifestVersion(build: string): string {
  const parsed = parseVersion(build.replace(/\+[0-9A-Za-z.-]+$/, ''));
  if (parsed === null) throw new Error(`not a build version: ${build}`);
  return coreOf(parsed);
}

/** Precedence of two releases' cores (pre-releases aside): negative, 0 or positive. */
export function compareCores(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** The development version after releasing `released`: the next minor's `-dev`. */
export function nextDevelopment(released: Version): string {
  return `${released.major}.${released.minor + 1}.0-dev`;
}

/** How many hex digits of the revision a pre-release's build metadata carries. */
export const SHORT_REVISION = 7;

/**
 * What a build of `version` at `revision` reports: a release as it is (the revision is reported
 * beside it, in its own field), a pre-release with `+<short revision>`.
 */
export function buildVersion(version: string, revision: string): string {
  const parsed = parseVersion(version);
  if (parsed === null)
    throw new Error(`the workspace version must be X.Y.Z or X.Y.Z-pre (semver): ${version}`);
  if (parsed.prerelease === undefined) return version;
  return `${version}+${revision.slice(0, SHORT_REVISION)}`;
}

/** The workspace's version: the root package.json's. */
export function workspaceVersion(root = ROOT): string {
  const { version } = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as {
    version?: unknown;
  };
  if (typeof version !== 'string' || parseVersion(version) === null)
    throw new Error(`the root package.json's version must be X.Y.Z or X.Y.Z-pre: ${version}`);
  return version;
}

/**
 * The commit being built, a full hash: `BATON_REVISION` when set (the image build, whose context
 * has no .git), else `git rev-parse HEAD`. Anything else stops the build: it must say what it is.
 */
export function gitRevision(root = ROOT, env: NodeJS.ProcessEnv = process.env): string {
  const given = env['BATON_REVISION'];
  let found: string;
  try {
    found =
      given === undefined || given === ''
        ? execFileSync('git', ['rev-parse', 'HEAD'], {
            cwd: root,
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'pipe'],
          }).trim()
        : given;
  } catch (error) {
    throw new Error(
      'no git revision: build from a git checkout, or set BATON_REVISION to the commit (the image build takes it as --build-arg REVISION)',
      { cause: error },
    );
  }
  if (!/^[0-9a-f]{40}$/.test(found))
    throw new Error(`the revision must be a full commit hash (40 hex digits): ${found}`);
  return found;
}

/** This checkout's build: the workspace version, the revision, and what a build reports. */
export function currentBuild(
  root = ROOT,
  env: NodeJS.ProcessEnv = process.env,
): { version: string; revision: string; buildVersion: string } {
  const version = workspaceVersion(root);
  const revision = gitRevision(root, env);
  return { version, revision, buildVersion: buildVersion(version, revision) };
}

/**
 * The build version where the revision is needed only for a pre-release: a release rebuilt from
 * its sources (the Firefox reviewers' zip holds no .git) needs none.
 */
export function currentBuildVersion(root = ROOT, env: NodeJS.ProcessEnv = process.env): string {
  const version = workspaceVersion(root);
  return parseVersion(version)?.prerelease === undefined
    ? version
    : buildVersion(version, gitRevision(root, env));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    console.log(currentBuildVersion());
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
