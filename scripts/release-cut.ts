/**
 * The two edits around a release (docs/releasing.md), each then committed by hand:
 *
 *   pnpm release:cut X.Y.Z   the release commit's content: what CHANGELOG.md's [Unreleased] holds
 *                            becomes `## [X.Y.Z] - <today, UTC>` (link lines made afresh), and the
 *                            version is X.Y.Z everywhere it is written down. Commit it as
 *                            "Release X.Y.Z": the release checks find releases by that subject.
 *   pnpm release:next        after that commit: the next minor's `-dev` everywhere, so that
 *                            nothing built later says it is X.Y.Z.
 *
 * Where the version is written down: every package.json of the workspace, docs/openapi.json's
 * `info.version`, and deploy/kubernetes/base/kustomization.yaml's version label and image tag.
 *
 *   node scripts/release-cut.ts <X.Y.Z> [--date YYYY-MM-DD] [--root <dir>]
 *   node scripts/release-cut.ts --next [--root <dir>]
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cutRelease, parseChangelog, releasedVersions, repositoryUrl } from './changelog.ts';
import {
  compareCores,
  coreOf,
  nextDevelopment,
  parseVersion,
  ROOT,
  workspaceVersion,
} from './version.ts';

/** Every file that writes the version down, with the text around it that says where. */
async function versionPlaces(root: string): Promise<{ file: string; before: RegExp }[]> {
  const workspace = await readFile(join(root, 'pnpm-workspace.yaml'), 'utf8');
  // The `packages:` list only: other top-level lists (ignoredOptionalDependencies) name packages.
  const packages = /^packages:\n((?: {2}- .*\n?)*)/m.exec(workspace)?.[1] ?? '';
  const folders = [...packages.matchAll(/^ {2}- (\S+)$/gm)].map((found) => found[1] ?? '');
  return [
    ...['.', ...folders].map((folder) => ({
      file: join(folder, 'package.json'),
      before: /^ {2}"version": "/m,
    })),
    { file: 'docs/openapi.json', before: /^ {4}"version": "/m },
    { file: 'docs/admin-openapi.json', before: /^ {4}"version": "/m },
    {
      file: 'deploy/kubernetes/base/kustomization.yaml',
      before: /^ {6}app\.kubernetes\.io\/version: /m,
    },
    { file: 'deploy/kubernetes/base/kustomization.yaml', before: /^ {4}newTag: /m },
  ];
}

/** Rewrites `from` to `to` in each place; fails, changing nothing, when one does not hold `from`. */
async function setVersion(root: string, from: string, to: string): Promise<string[]> {
  const texts = new Map<string, string>();
  const problems: string[] = [];
  for (const { file, before } of await versionPlaces(root)) {
    const text = texts.get(file) ?? (await readFile(join(root, file), 'utf8'));
    const place = new RegExp(`(${before.source})${from.replace(/[.+]/g, '\\$&')}(?=["\\s])`, 'm');
    if (!place.test(text)) problems.push(`${file}: no ${before.source}${from}`);
    texts.set(
      file,
      text.replace(place, (_whole, head: string) => `${head}${to}`),
    );
  }
  if (problems.length > 0)
    throw new Error(`the version ${from} is not where it should be:\n  ${problems.join('\n  ')}`);
  for (const [file, text] of texts) await writeFile(join(root, file), text);
  return [...texts.keys()];
}

export async function cut(root: string, version: string, date: string): Promise<string[]> {
  const target = parseVersion(version);
  if (target === null || target.prerelease !== undefined)
    throw new Error(`a release is X.Y.Z: ${version}`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`the date is YYYY-MM-DD: ${date}`);
  const current = workspaceVersion(root);
  const parsed = parseVersion(current);
  if (parsed?.prerelease === undefined)
    throw new Error(
      `the workspace is at ${current}, a release: open the next version first (pnpm release:next)`,
    );
  const changelogPath = join(root, 'CHANGELOG.md');
  const text = await readFile(changelogPath, 'utf8');
  const [latest] = releasedVersions(parseChangelog(text));
  const latestParsed = latest === undefined ? null : parseVersion(latest);
  if (latestParsed !== null && compareCores(target, latestParsed) <= 0)
    throw new Error(`${version} does not come after the latest release, ${latest}`);
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as object;
  const next = cutRelease(text, version, date, repositoryUrl(manifest));
  const files = await setVersion(root, current, version);
  await writeFile(changelogPath, next);
  if (coreOf(parsed) !== version)
    console.log(`note: the workspace was heading for ${coreOf(parsed)}; this releases ${version}`);
  return ['CHANGELOG.md', ...files];
}

export async function openNext(root: string): Promise<{ version: string; files: string[] }> {
  const current = workspaceVersion(root);
  const parsed = parseVersion(current);
  const [latest] = releasedVersions(
    parseChangelog(await readFile(join(root, 'CHANGELOG.md'), 'utf8')),
  );
  if (parsed === null || parsed.prerelease !== undefined || current !== latest)
    throw new Error(
      `the workspace is at ${current}, not at the changelog's latest release (${latest}): run this after the release commit`,
    );
  const version = nextDevelopment(parsed);
  return { version, files: await setVersion(root, current, version) };
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      next: { type: 'boolean', default: false },
      date: { type: 'string' },
      root: { type: 'string' },
    },
  });
  const root = resolve(values.root ?? ROOT);
  const [version] = positionals;
  if (values.next) {
    const opened = await openNext(root);
    console.log(`${opened.version} in ${opened.files.join(', ')}`);
    console.log(`next: git commit -am "Version ${opened.version}: development after the release"`);
    return;
  }
  if (version === undefined || positionals.length > 1)
    throw new Error('usage: release-cut.ts <X.Y.Z> [--date YYYY-MM-DD] | --next');
  const date = values.date ?? new Date().toISOString().slice(0, 10);
  const files = await cut(root, version, date);
  console.log(`${version} (${date}) in ${files.join(', ')}`);
  console.log(
    [
      'next:',
      '  git diff                                   # read the release entry once more',
      `  git commit -am "Release ${version}"`,
      `  git tag -a v${version} -m "Release ${version}"`,
      '  WXT_BROKER_URL=… WXT_GECKO_ID=… pnpm release   # the release folder, from that commit',
      '  pnpm release:next && git commit -am "…"        # then development goes on',
    ].join('\n'),
  );
}

if (import.meta.filename === process.argv[1]) {
  await main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(`release-cut: ${(error as Error).message}`);
    process.exit(1);
  });
}
