/**
 * `pnpm start`: run Baton locally. Builds the extension for Chrome and Firefox pointing at the
 * broker, starts the provider sandbox and the broker (embedded store unless REDIS_URL is set),
 * prints where everything is, and stops it all on Ctrl-C. `pnpm dev` runs WXT's dev mode instead
 * of a one-off build. WXT_API_ORIGINS, from the environment, reaches the builds: a fork with content
 * scripts of its own sets it (docs/extending.md), and the build says so when it is missing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dev = process.argv.includes('--dev');
const brokerPort = process.env.PORT ?? '8787';
const sandboxPort = process.env.SANDBOX_PORT ?? '8788';
const brokerUrl = process.env.WXT_BROKER_URL ?? `http://127.0.0.1:${brokerPort}`;
const children = new Set<ChildProcess>();
let stopping = false;

/** Child output is held back until the summary is printed, then passed through. */
let passThrough = false;

function run(name: string, command: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const lines: string[] = [];
  const waiters = new Set<(line: string) => void>();
  const onLine = (line: string) => {
    lines.push(line);
    if (lines.length > 200) lines.shift();
    if (passThrough) console.log(`[${name}] ${line}`);
    for (const waiter of waiters) waiter(line);
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  void exited.then((code) => {
    children.delete(child);
    if (!stopping && passThrough) {
      console.error(`\n${name} stopped unexpectedly (exit ${code}).`);
      void stop(1);
    }
  });
  return {
    lines,
    exited,
    /** Resolves with the first line that matches; rejects with the output if the process exits first. */
    waitFor(pattern: RegExp): Promise<string> {
      return new Promise<string>((resolve, reject) => {
        const seen = lines.find((line) => pattern.test(line));
        if (seen !== undefined) return resolve(seen);
        waiters.add((line) => {
          if (pattern.test(line)) resolve(line);
        });
        void exited.then((code) =>
          reject(new Error(`${name} exited (${code}) before it was ready:\n${lines.join('\n')}`)),
        );
      });
    },
  };
}

async function build(target: 'build' | 'build:firefox'): Promise<void> {
  const step = run(`extension ${target}`, 'pnpm', ['--filter', '@baton/extension', target], {
    WXT_BROKER_URL: brokerUrl,
  });
  const code = await step.exited;
  if (code !== 0) throw new Error(`extension ${target} failed:\n${step.lines.join('\n')}`);
}

async function stop(code: number): Promise<never> {
  stopping = true;
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

try {
  if (!dev) {
    console.log(`Building the extension for Chrome and Firefox (broker ${brokerUrl})…`);
    await build('build');
    await build('build:firefox');
  }
  const sandbox = run('sandbox', process.execPath, ['test/sandbox/src/main.ts'], {
    SANDBOX_PORT: sandboxPort,
  });
  await sandbox.waitFor(/http:\/\//);
  const broker = run('broker', process.execPath, ['server/src/main.ts'], {
    PORT: brokerPort,
    AUTH_URL: process.env.AUTH_URL ?? `http://127.0.0.1:${sandboxPort}`,
    API_URL_ALLOWLIST: process.env.API_URL_ALLOWLIST ?? `http://127.0.0.1:${sandboxPort}`,
  });
  await broker.waitFor(/"broker listening"/);
  const development = broker.lines
    .map((line) => {
      try {
        return JSON.parse(line) as { msg?: string; defaults?: string[] };
      } catch {
        return {};
      }
    })
    .find((entry) => entry.msg?.startsWith('DEVELOPMENT SETUP'));
  if (dev) {
    const wxt = run('wxt', 'pnpm', ['--filter', '@baton/extension', 'dev'], {
      WXT_BROKER_URL: brokerUrl,
    });
    await wxt.waitFor(/./);
  }

  const sandboxInfo = (await (
    await fetch(`http://127.0.0.1:${sandboxPort}/`, { headers: { accept: 'application/json' } })
  ).json()) as { password: string; accounts: { email: string; licenses: { name: string }[] }[] };
  const out = (path: string) => `${root}extension/.output/${path}`;
  console.log(`
Baton is running.
  Broker:   ${brokerUrl}  (store: ${process.env.REDIS_URL ? process.env.REDIS_URL : 'embedded, in memory'})
  Provider sandbox: http://127.0.0.1:${sandboxPort}
  Demo accounts (password "${sandboxInfo.password}"):
${sandboxInfo.accounts
  .map((account) => `    ${account.email}  (${account.licenses.map((l) => l.name).join(', ')})`)
  .join('\n')}
${
  dev
    ? '  Extension: WXT dev mode is running (live reload).'
    : `  Extension, load unpacked:
    Chrome/Chromium: chrome://extensions → Developer mode → Load unpacked → ${out('chrome-mv3')}
    Firefox:         about:debugging#/runtime/this-firefox → Load Temporary Add-on → ${out('firefox-mv3/manifest.json')}`
}
  Integrator API (docs/extending.md): content scripts on ${process.env.WXT_API_ORIGINS?.trim() || 'no origin of yours (WXT_API_ORIGINS unset)'}
    and on http://localhost, http://127.0.0.1 (any port: development builds only)
  Then open the Baton popup and press Connect.
${
  development?.defaults
    ? `  DEVELOPMENT SETUP: insecure defaults for ${development.defaults.join(', ')}. Never deploy like this.\n`
    : ''
}  Stop with Ctrl-C.
`);
  passThrough = true;
} catch (error) {
  console.error((error as Error).message);
  await stop(1);
}
