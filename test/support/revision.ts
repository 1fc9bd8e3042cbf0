import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export const git = (...args: string[]): string =>
  execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

/** The pnpm store this checkout was installed from, so that a past revision installs offline. */
function storeDir(): string | undefined {
  const modules = readFileSync(join(root, 'node_modules/.modules.yaml'), 'utf8');
  return /"storeDir": "([^"]+)"/.exec(modules)?.[1]?.replace(/\/v\d+$/, '');
}

/**
 * A past revision's broker, to run beside this checkout's (test/bench/compare.ts) or to write a
 * Redis as that release did (test/upgrade/record.ts): a detached git worktree of `rev` in the temp
 * folder, made once per commit and kept for the next run, with the broker's packages installed
 * from this checkout's pnpm store (offline where it can). Answers the worktree and the full commit.
 */
export function checkoutRevision(rev: string): { dir: string; commit: string } {
  const commit = git('rev-parse', '--verify', `${rev}^{commit}`);
  const dir = join(tmpdir(), `baton-rev-${commit.slice(0, 7)}`);
  if (!existsSync(join(dir, 'server/node_modules'))) {
    if (!existsSync(dir)) git('worktree', 'add', '--detach', dir, commit);
    const store = storeDir();
    execFileSync(
      'pnpm',
      [
        'install',
        '--frozen-lockfile',
        '--prefer-offline',
        '--filter',
        '@baton/server...',
        ...(store === undefined ? [] : ['--store-dir', store]),
      ],
      { cwd: dir, stdio: 'ignore' },
    );
  }
  return { dir, commit };
}
