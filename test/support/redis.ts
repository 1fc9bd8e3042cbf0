import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

export interface RedisServerOptions {
  /** Keep data across stop/start with an append-only file (for restart tests). */
  appendonly?: boolean;
  /** Extra `--name value` arguments for redis-server. */
  args?: string[];
}

/**
 * A real redis-server of the test's own, on a free loopback port with a temp dir. It can be
 * stopped, started again on the same port, killed and restarted, for fault tests.
 */
export class RedisServer {
  readonly port: number;
  readonly dir: string;
  readonly #options: RedisServerOptions;
  #process: ChildProcess | undefined;
  /** Everything redis-server wrote, across restarts. */
  readonly lines: string[] = [];

  private constructor(port: number, dir: string, options: RedisServerOptions) {
    this.port = port;
    this.dir = dir;
    this.#options = options;
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const dir = await mkdtemp(join(tmpdir(), 'baton-redis-'));
    const server = new RedisServer(await freePort(), dir, options);
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.#process !== undefined;
  }

  /** Start (again) on the same port and directory; resolves once Redis accepts connections. */
  async start(): Promise<void> {
    if (this.#process) return;
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      this.#options.appendonly ? 'yes' : 'no',
      '--appendfsync',
      'always',
      ...(this.#options.args ?? []),
    ];
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#process = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          child.stdout?.off('data', onData);
          resolve();
        }
      };
      const keep = (chunk: Buffer): void => {
        this.lines.push(...chunk.toString().split('\n').filter(Boolean));
      };
      child.stdout?.on('data', onData);
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.once('error', reject);
      child.once('exit', (code) => {
        this.#process = undefined;
        reject(new Error(`redis-server exited with ${code} before it was ready:\n${output}`));
      });
    });
    child.removeAllListeners('exit');
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined;
    });
  }

  /** Stop cleanly (SIGTERM: Redis flushes its append-only file). */
  async stop(): Promise<void> {
    await this.#signal('SIGTERM');
  }

  /** Kill at once (SIGKILL), as a crash would. */
  async kill(): Promise<void> {
    await this.#signal('SIGKILL');
  }

  /** Freeze the process (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void {
    this.#process?.kill('SIGSTOP');
  }

  /** Thaw a paused process (SIGCONT). */
  resume(): void {
    this.#process?.kill('SIGCONT');
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async #signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.#process;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
    this.#process = undefined;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}
