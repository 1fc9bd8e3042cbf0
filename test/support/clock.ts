/** One injected clock for the broker and the sandbox: tests move time, never wait for it. */
export class TestClock {
  #now: number;

  constructor(start = Date.UTC(2026, 10, 21, 9, 0, 0)) {
    this.#now = start;
  }

  readonly now = (): number => this.#now;

  advance(ms: number): void {
    this.#now += ms;
  }
}
