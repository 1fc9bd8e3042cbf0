import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';

const DEPLOY_SCRIPT = fileURLToPath(new URL('../../server/scripts/deploy.ts', import.meta.url));

/** The broker's deployable folder, built by its own script into a temp dir. */
export interface DeployedFolder extends AsyncDisposable {
  dir: string;
}

export async function buildDeployedFolder(): Promise<DeployedFolder> {
  const parent = await mkdtemp(join(tmpdir(), 'baton-deploy-'));
  const dir = join(parent, 'broker');
  await promisify(execFile)(process.execPath, [DEPLOY_SCRIPT, dir], {
    env: { ...process.env, INIT_CWD: parent },
  });
  return { dir, [Symbol.asyncDispose]: () => rm(parent, { recursive: true, force: true }) };
}

export interface DeployedRun {
  child: ChildProcess;
  /** Every line it wrote to stdout or stderr. */
  lines: string[];
  exited: Promise<number | null>;
  /** Resolves on the first line (already written or to come) that includes `text`. */
  line(text: string): Promise<string>;
}

/**
 * Runs `node <dir>/dist/main.js` with exactly `env` (plus PATH): nothing from the test's own
 * environment leaks in, as in a container.
 */
export function runDeployed(dir: string, env: Record<string, string>): DeployedRun {
  const child = spawn(process.execPath, [join(dir, 'dist/main.js')], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const events = new EventEmitter();
  const onLine = (line: string): void => {
    lines.push(line);
    events.emit('line', line);
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const line = (text: string): Promise<string> => {
    const found = lines.find((each) => each.includes(text));
    if (found !== undefined) return Promise.resolve(found);
    return new Promise<string>((resolve, reject) => {
      const listener = (each: string): void => {
        if (!each.includes(text)) return;
        events.off('line', listener);
        resolve(each);
      };
      events.on('line', listener);
      void exited.then((code) => {
        events.off('line', listener);
        reject(new Error(`exited with ${code} before writing "${text}":\n${lines.join('\n')}`));
      });
    });
  };
  return { child, lines, exited, line };
}

/** A deployed broker that is listening; its log lines captured. */
export class DeployedBroker implements AsyncDisposable {
  readonly url: string;
  readonly lines: string[];
  /** Resolves on the first log line that includes `text`. */
  readonly line: (text: string) => Promise<string>;
  readonly #child: ChildProcess;
  readonly #exited: Promise<number | null>;

  private constructor(url: string, run: DeployedRun) {
    this.url = url;
    this.lines = run.lines;
    this.line = run.line;
    this.#child = run.child;
    this.#exited = run.exited;
  }

  static async start(dir: string, env: Record<string, string>): Promise<DeployedBroker> {
    const port = await freePort();
    const run = runDeployed(dir, { ...env, PORT: String(port), HOST: '127.0.0.1' });
    await run.line('"broker listening"');
    return new DeployedBroker(`http://127.0.0.1:${port}`, run);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill(signal);
    return this.#exited;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop('SIGKILL');
  }
}
