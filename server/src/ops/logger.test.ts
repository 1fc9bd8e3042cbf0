import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';

const LOGGER = new URL('./logger.ts', import.meta.url).href;

/** A Node process that logs through createLogger's own stdout destination, as the broker does. */
function logging(script: string) {
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { createLogger } from ${JSON.stringify(LOGGER)};
       const log = createLogger('info');
       ${script}`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  const input = createInterface({ input: child.stdout });
  input.on('line', (line) => lines.push(line));
  return { child, lines, input };
}

let stop: (() => void) | undefined;
afterEach(() => stop?.());

describe('the log on stdout', () => {
  it('gathers lines, and every one is written by the time the process exits', async () => {
    const { child, lines } = logging(
      `for (let i = 0; i < 2000; i++) log.info({ i }, 'line');
       process.exit(0);`,
    );
    await once(child, 'close');
    expect(lines).toHaveLength(2000);
    expect(lines.map((line) => (JSON.parse(line) as { i: number }).i)).toEqual(
      Array.from({ length: 2000 }, (_, i) => i),
    );
  });

  it('writes every line when the process ends of itself, with nothing left to do', async () => {
    const { child, lines } = logging(`for (let i = 0; i < 2000; i++) log.info({ i }, 'line');`);
    await once(child, 'close');
    expect(lines).toHaveLength(2000);
    expect(JSON.parse(lines[1999]!)).toMatchObject({ i: 1999 });
  });

  it('keeps lines whole and in order across gathers: multi-byte text, and one larger than a gather', async () => {
    // Each line has more bytes than characters, so a gather that counted characters would cut one.
    const place = `Liège, Sint-Niklaas ${'é€😀'.repeat(20)}`;
    const { child, lines } = logging(
      `const place = ${JSON.stringify(place)};
       for (let i = 0; i < 1000; i++) log.info({ i, place }, 'line');
       log.info({ big: 'x'.repeat(100_000) }, 'big');
       for (let i = 1000; i < 2000; i++) log.info({ i, place }, 'line');
       process.exit(0);`,
    );
    await once(child, 'close');
    expect(lines).toHaveLength(2001);
    const parsed = lines.map(
      (line) => JSON.parse(line) as { i?: number; place?: string; big?: string },
    );
    expect(parsed[1000]!.big).toHaveLength(100_000);
    const numbered = parsed.filter((line) => line.big === undefined);
    expect(numbered.map((line) => line.i)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(new Set(numbered.map((line) => line.place))).toEqual(new Set([place]));
  });

  it('writes a lone line while the process goes on, without waiting for more', async () => {
    const { child, input } = logging(
      `log.info('alone');
       setInterval(() => {}, 60_000);`,
    );
    stop = () => child.kill();
    const [line] = (await once(input, 'line')) as [string];
    expect(JSON.parse(line)).toMatchObject({ msg: 'alone', service: 'baton-broker' });
  });
});
