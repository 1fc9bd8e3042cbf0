/**
 * CHANGELOG.md in Keep a Changelog's form (https://keepachangelog.com/en/1.1.0/): a preamble,
 * `## [Unreleased]`, then `## [X.Y.Z] - YYYY-MM-DD` newest first, and at the end one link line per
 * heading, made from the root package.json's `repository` (docs/releasing.md). A released
 * section is never rewritten: scripts/release-cut.ts only moves what [Unreleased] holds into a new
 * release's section, and test/release/changelog.test.ts compares each with its release commit's.
 */

export interface Section {
  /** `Unreleased`, or the version. */
  name: string;
  /** The release's date, YYYY-MM-DD; undefined for [Unreleased]. */
  date: string | undefined;
  /** The heading line and everything under it, without its trailing blank lines. */
  text: string;
  /** What is under the heading, trimmed: empty when nothing is. */
  body: string;
}

export interface Changelog {
  /** Everything before the first `## ` heading, trimmed at its end. */
  preamble: string;
  sections: Section[];
  /** The link lines at the end: `[name]: url`. */
  links: Map<string, string>;
}

const HEADING = /^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/;
const LINK = /^\[([^\]]+)\]: (\S+)$/;

/** The sections and link lines of a changelog; throws on a `## ` heading of another form. */
export function parseChangelog(text: string): Changelog {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  // The link lines: the last lines of the file that are link definitions or blank.
  const isLinkOrBlank = (line: string | undefined): boolean =>
    line !== undefined && (line.trim() === '' || LINK.test(line));
  let end = lines.length;
  while (end > 0 && isLinkOrBlank(lines[end - 1])) end -= 1;
  const links = new Map<string, string>();
  for (const line of lines.slice(end)) {
    const [, name, url] = LINK.exec(line) ?? [];
    if (name !== undefined && url !== undefined) links.set(name, url);
  }
  const body = lines.slice(0, end);
  const starts = body.flatMap((line, index) => (line.startsWith('## ') ? [index] : []));
  const sections = starts.map((start, index): Section => {
    const heading = body[start] ?? '';
    const [, name, date] = HEADING.exec(heading) ?? [];
    if (name === undefined)
      throw new Error(
        `a changelog heading must read "## [Unreleased]" or "## [X.Y.Z] - YYYY-MM-DD": ${heading}`,
      );
    const sectionLines = body.slice(start, starts[index + 1] ?? body.length);
    while (sectionLines.length > 1 && sectionLines.at(-1)?.trim() === '') sectionLines.pop();
    return {
      name,
      date,
      text: sectionLines.join('\n'),
      body: sectionLines.slice(1).join('\n').trim(),
    };
  });
  return {
    preamble: body
      .slice(0, starts[0] ?? body.length)
      .join('\n')
      .trimEnd(),
    sections,
    links,
  };
}

/** The released sections' versions, newest first. */
export const releasedVersions = (changelog: Changelog): string[] =>
  changelog.sections.filter((section) => section.name !== 'Unreleased').map((s) => s.name);

/**
 * The web address of the repository from a package.json's `repository` (a string, or `{ url }`
 * with npm's `git+…` and `.git`): https only.
 */
export function repositoryUrl(manifest: { repository?: unknown }): string {
  const { repository } = manifest;
  const raw =
    typeof repository === 'string'
      ? repository
      : typeof repository === 'object' && repository !== null && 'url' in repository
        ? String(repository.url)
        : undefined;
  if (raw === undefined)
    throw new Error(
      'the root package.json has no "repository": the changelog links and the image label need it',
    );
  const url = raw.replace(/^git\+/, '').replace(/\.git$/, '');
  if (!/^https:\/\/[^/]+\/\S+[^/]$/.test(url))
    throw new Error(`the repository must be an https address: ${raw}`);
  return url;
}

/**
 * Keep a Changelog's link lines for `versions` (newest first) on a GitHub-style host (also
 * GitLab's and Gitea's form): [Unreleased] compares the latest tag with HEAD, each release its tag
 * with the one before, the first release links its tag. Tags are `vX.Y.Z`.
 */
export function linkLines(repository: string, versions: readonly string[]): string[] {
  const [latest] = versions;
  const lines = [
    latest === undefined
      ? `[Unreleased]: ${repository}/commits/HEAD`
      : `[Unreleased]: ${repository}/compare/v${latest}...HEAD`,
  ];
  versions.forEach((version, index) => {
    const previous = versions[index + 1];
    lines.push(
      previous === undefined
        ? `[${version}]: ${repository}/releases/tag/v${version}`
        : `[${version}]: ${repository}/compare/v${previous}...v${version}`,
    );
  });
  return lines;
}

/** The changelog with its link lines made afresh for its headings. */
export function withLinkLines(text: string, repository: string): string {
  const changelog = parseChangelog(text);
  return render(changelog, repository);
}

function render(changelog: Changelog, repository: string): string {
  const parts = [changelog.preamble, ...changelog.sections.map((section) => section.text)];
  const links = linkLines(repository, releasedVersions(changelog));
  return `${parts.join('\n\n')}\n\n${links.join('\n')}\n`;
}

/**
 * The release of `version` on `date`: what [Unreleased] holds becomes `## [version] - date`,
 * [Unreleased] stays, empty, and the link lines follow. Every released section is kept as it is.
 */
export function cutRelease(
  text: string,
  version: string,
  date: string,
  repository: string,
): string {
  const changelog = parseChangelog(text);
  const unreleased = changelog.sections[0];
  if (unreleased?.name !== 'Unreleased')
    throw new Error('the changelog must start with "## [Unreleased]"');
  if (unreleased.body === '') throw new Error('[Unreleased] is empty: there is nothing to release');
  if (changelog.sections.some((section) => section.name === version))
    throw new Error(`the changelog has a section for ${version} already`);
  const released: Section = {
    name: version,
    date,
    text: `## [${version}] - ${date}\n\n${unreleased.body}`,
    body: unreleased.body,
  };
  const cleared: Section = { ...unreleased, text: '## [Unreleased]', body: '' };
  return render(
    { ...changelog, sections: [cleared, released, ...changelog.sections.slice(1)] },
    repository,
  );
}
