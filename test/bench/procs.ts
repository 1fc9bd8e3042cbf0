import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/ports.ts';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));
export const BROKER_MAIN = here('../../server/src/main.ts');
export const SANDBOX_MAIN = here('../sandbox/src/main.ts');
export const BARE_PROXY = here('./bare-proxy.ts');
export const ELD_HOOK = here('./eld-hook.ts');

const TICK_MS = 10; // CLK_TCK = 100 on Linux

/** The name and utime + stime in ms in a /proc stat file (a process's, or one thread's). */
export function statCpu(path: string): { name: string; ms: number } {
  const stat = readFileSync(path, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  const ms = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ms };
}

/** utime + stime of a process, in ms, from /proc/<pid>/stat. */
export const cpuMs = (pid: number): number => statCpu(`/proc/${pid}/stat`).ms;

/** Resident set size in bytes, from /proc/<pid>/status. */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kb ?? 0) * 1024;
}

/**
 * The text of `file` once a process running one of the bench's hooks has written it (each writes
 * its file whole and renames it into place, so it is never read half written), polled for up to
 * `timeoutMs`.
 */
export async function writtenFile(file: string, timeoutMs = 10_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return readFileSync(file, 'utf8');
    } catch (error) {
      if (Date.now() > end) throw new Error(`nothing wrote ${file}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** A minute: three brokers starting at once on a busy 2-core host took 24-26 s to listen. */
async function waitHttp(url: string, deadlineMs = 60_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      return;
    } catch (error) {
      if (Date.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * The CPUs of the process under test (a broker or the bare proxy) when the bench pins processes
 * (`run.ts --pin`): it then starts under `taskset`, so that every thread it makes stays there.
 */
let measuredCpus: string | undefined;

/**
 * Keeps this process and every child it starts after this call (load generators, Redis, the
 * upstream) on the first half of the CPUs, and each process under test on the second half, as a
 * machine with cores of its own for the load would. Answers the two CPU lists.
 */
export function pinProcesses(cores: number): { load: string; measured: string } {
  if (cores < 2) throw new Error('pinning needs at least two CPUs');
  const half = Math.floor(cores / 2);
  const list = (from: number, to: number) => (from === to ? `${from}` : `${from}-${to}`);
  const load = list(0, half - 1);
  measuredCpus = list(half, cores - 1);
  execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', load, String(process.pid)], {
    stdio: 'ignore',
  });
  return { load, measured: measuredCpus };
}

/** A child process whose output goes to a log file (never buffered in the bench process). */
export class Proc {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly logFile: string;
  readonly child: ChildProcess;

  constructor(name: string, child: ChildProcess, port: number, logFile: string) {
    this.name = name;
    this.child = child;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.logFile = logFile;
  }

  get pid(): number {
    return this.child.pid!;
  }

  static async start(options: {
    name: string;
    args: string[];
    env: Record<string, string>;
    port: number;
    logFile: string;
    readyPath: string;
    /** A process under test: on the measured CPUs when the bench pins (pinProcesses). */
    measured?: boolean;
  }): Promise<Proc> {
    const fd = openSync(options.logFile, 'a');
    const [command, args] =
      options.measured && measuredCpus !== undefined
        ? ['taskset', ['--cpu-list', measuredCpus, process.execPath, ...options.args]]
        : [process.execPath, options.args];
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '', ...options.env },
      stdio: ['ignore', fd, fd],
    });
    const proc = new Proc(options.name, child, options.port, options.logFile);
    const exited = new Promise<never>((_resolve, reject) =>
      child.once('exit', (code) =>
        reject(new Error(`${options.name} exited with ${code}; see ${options.logFile}`)),
      ),
    );
    await Promise.race([waitHttp(`${proc.url}${options.readyPath}`), exited]);
    exited.catch(() => {});
    return proc;
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill(signal);
    await exited;
  }
}

export { freePort };
