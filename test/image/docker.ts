import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { currentBuildVersion } from '../../scripts/version.ts';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The stand-in for the official `node:24-slim`, which no registry here can serve. */
export const BASE_IMAGE = 'node:24-slim';
export const IMAGE = 'baton-broker:test';

/**
 * What the image is built from, as a release build passes it (server/Dockerfile's build args):
 * the workspace's version, this checkout's commit, and a repository URL (an integrator's own).
 */
export const BUILD_ARGS = {
  VERSION: currentBuildVersion(ROOT),
  REVISION: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
  SOURCE: 'https://git.example.com/baton/baton',
};

/** `docker …`, its output; rejects with what docker said. */
export async function docker(
  args: string[],
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  try {
    const { stdout } = await run('docker', args, {
      timeout: options.timeoutMs ?? 60_000,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, ...options.env },
    });
    return stdout.trim();
  } catch (error) {
    const { stderr = '', stdout = '' } = error as { stderr?: string; stdout?: string };
    throw new Error(`docker ${args.slice(0, 3).join(' ')} failed:\n${stdout}${stderr}`, {
      cause: error,
    });
  }
}

const answers = (): Promise<boolean> =>
  docker(['info', '--format', '{{.ServerVersion}}'], { timeoutMs: 10_000 }).then(
    () => true,
    () => false,
  );

/**
 * A Docker engine to talk to: the running one, or a `dockerd` started here (as root), which
 * `stop` then stops (and only that one). Fails, saying why, when the machine cannot run one:
 * never a skip.
 */
export async function ensureDockerd(): Promise<{ started: boolean; stop(): Promise<void> }> {
  if (await answers()) return { started: false, stop: async () => {} };
  if (process.getuid?.() !== 0)
    throw new Error(
      'no Docker engine answers, and starting dockerd needs root: run the image suite as root or start dockerd first',
    );
  let child: ChildProcess;
  const output: string[] = [];
  try {
    child = spawn('dockerd', ['--host', 'unix:///var/run/docker.sock'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    throw new Error('dockerd could not be started (is docker.io installed?)', { cause: error });
  }
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', (error) => {
      output.push(String(error));
      resolve(-1);
    });
    child.once('exit', (code) => resolve(code));
  });
  for (const stream of [child.stdout, child.stderr])
    stream?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const deadline = Date.now() + 60_000;
  while (!(await answers())) {
    const code = await Promise.race([
      exited,
      new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 250)),
    ]);
    if (code !== 'waiting')
      throw new Error(
        `dockerd exited (${code}) before it answered; this machine cannot run it:\n${output.join('').slice(-4000)}`,
      );
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`dockerd did not answer within 60 s:\n${output.join('').slice(-4000)}`);
    }
  }
  return {
    started: true,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The Debian mirror apt is configured with (deb822 or one-line sources). */
function aptMirror(): string {
  for (const file of ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const found =
      /^URIs:\s*(\S+\/debian)\s*$/m.exec(text) ??
      /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\s+bookworm\b/m.exec(text);
    if (found?.[1]) return found[1];
  }
  throw new Error('no Debian mirror found in /etc/apt/sources.list(.d): debootstrap needs one');
}

/**
 * The stand-in base image, made once and kept in Docker's image store: a minimal Debian bookworm
 * (debootstrap), this process's own Node 24 binary, npm from the registry, the machine's CA
 * bundle (the registry is reached through it), and the `node` user (uid 1000) the official image
 * has. Returns how long it took (0: it was there already).
 */
export async function ensureBaseImage(): Promise<number> {
  if (
    await docker(['image', 'inspect', BASE_IMAGE]).then(
      () => true,
      () => false,
    )
  )
    return 0;
  const started = performance.now();
  const rootfs = join(ROOT, '.ci/cache/image-base/rootfs');
  await rm(rootfs, { recursive: true, force: true });
  await mkdir(rootfs, { recursive: true });
  await run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, aptMirror()], {
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  await copyFile(process.execPath, join(rootfs, 'usr/local/bin/node'));
  await run(
    'npm',
    ['install', '-g', '--prefix', join(rootfs, 'usr/local'), '--no-audit', '--no-fund', 'npm@11'],
    {
      timeout: 300_000,
    },
  );
  const ca = '/etc/ssl/certs/ca-certificates.crt';
  await mkdir(join(rootfs, 'etc/ssl/certs'), { recursive: true });
  await copyFile(ca, join(rootfs, ca.slice(1)));
  await mkdir(join(rootfs, 'usr/local/etc'), { recursive: true });
  await writeFile(join(rootfs, 'usr/local/etc/npmrc'), `cafile=${ca}\n`);
  await run('chroot', [rootfs, 'groupadd', '--gid', '1000', 'node']);
  await run('chroot', [
    rootfs,
    'useradd',
    '--uid',
    '1000',
    '--gid',
    'node',
    '--create-home',
    '--shell',
    '/bin/bash',
    'node',
  ]);
  await run(
    'sh',
    [
      '-c',
      `tar -C "${rootfs}" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'ENV NODE_EXTRA_CA_CERTS=${ca}' -c 'CMD ["node"]' - ${BASE_IMAGE}`,
    ],
    { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
  );
  await rm(rootfs, { recursive: true, force: true });
  return performance.now() - started;
}

/** Builds server/Dockerfile as `IMAGE`, with or without BuildKit; how long it took. */
export async function buildImage(buildKit: boolean): Promise<number> {
  const started = performance.now();
  await docker(
    [
      'build',
      '--network',
      'host',
      '--pull=false',
      ...Object.entries(BUILD_ARGS).flatMap(([name, value]) => ['--build-arg', `${name}=${value}`]),
      '-f',
      'server/Dockerfile',
      '-t',
      IMAGE,
      ROOT,
    ],
    { timeoutMs: 900_000, env: { DOCKER_BUILDKIT: buildKit ? '1' : '0' } },
  );
  return performance.now() - started;
}
