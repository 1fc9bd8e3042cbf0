import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.ts';

const BROKER_MAIN = fileURLToPath(new URL('../../server/src/main.ts', import.meta.url));

/** A broker as its own process (as deployed), with every log line it writes captured. */
export class BrokerProcess {
  readonly url: string;
  readonly lines: string[] = [];
  readonly #child: ChildProcess;

  private constructor(child: ChildProcess, url: string) {
    this.#child = child;
    this.url = url;
  }

  /** `main`: the broker's entry point (default this checkout's; a past revision's: revision.ts). */
  static async start(env: Record<string, string>, main = BROKER_MAIN): Promise<BrokerProcess> {
    const port = env.PORT === undefined ? await freePort() : Number(env.PORT);
    const child = spawn(process.execPath, [main], {
      env: {
        PATH: process.env.PATH ?? '',
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        ...env,
        PORT: String(port),
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const broker = new BrokerProcess(child, `http://127.0.0.1:${port}`);
    const ready = new Promise<void>((resolve, reject) => {
      const onLine = (line: string) => {
        broker.lines.push(line);
        if (line.includes('"broker listening"')) resolve();
      };
      createInterface({ input: child.stdout! }).on('line', onLine);
      createInterface({ input: child.stderr! }).on('line', onLine);
      child.once('exit', (code) =>
        reject(new Error(`broker exited with ${code}:\n${broker.lines.join('\n')}`)),
      );
    });
    await ready;
    return broker;
  }

  get pid(): number {
    return this.#child.pid!;
  }

  signal(signal: NodeJS.Signals): void {
    this.#child.kill(signal);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null)
      return this.#child.exitCode;
    const exited = new Promise<number | null>((resolve) =>
      this.#child.once('exit', (code) => resolve(code)),
    );
    this.#child.kill(signal);
    return exited;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop('SIGKILL');
  }
}
