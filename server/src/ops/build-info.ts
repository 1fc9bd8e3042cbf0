import { readFileSync } from 'node:fs';

/**
 * What runs, read beside the entry point `entry` (its import.meta.url): dist/build-info.json,
 * written by the build beside main.js and admin.js (version and git revision). Run from source
 * there is none: the package's version, and no revision.
 */
export function readBuildInfo(entry: string): { version: string; revision: string } {
  const read = (file: string): Record<string, unknown> => {
    try {
      return JSON.parse(readFileSync(new URL(file, entry), 'utf8')) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  const built = read('./build-info.json');
  const version = built.version ?? read('../package.json').version;
  return {
    version: typeof version === 'string' ? version : 'unknown',
    revision: typeof built.revision === 'string' ? built.revision : 'unknown',
  };
}
