/**
 * The nemesis: a seeded schedule of the fault kinds (faults.ts) and the runner that injects,
 * holds and heals each, at most one per domain at a time.
 */
import type { FaultRecord } from './history.ts';
import type { Random } from './random.ts';
import type { SoakSystem } from './system.ts';
import type { TopologyName } from './soak-redis.ts';
import { FAULT_KINDS, type Domain, type FaultKind, type Heal } from './faults.ts';

/** One fault as the schedule plans it: its kind, when, and how long it holds. */
export interface Planned {
  kind: FaultKind;
  at: number;
  holdMs: number;
}

/** The time a domain is left alone after a fault's heal, before its next fault. */
const SETTLE_MS: Record<Domain, number> = {
  broker: 4000,
  redis: 6000,
  provider: 2000,
  receiver: 2000,
};

/**
 * The seeded schedule: the kinds that exist on `topology` taken in turns (each turn in a new
 * random order, so every kind comes up as often), each at a random gap after the last, and no
 * earlier than its domain's previous fault ended and settled. Faults of different domains overlap.
 */
export function schedule(
  random: Random,
  topology: TopologyName,
  options: { durationMs: number; meanGapMs: number; kinds?: readonly string[] },
): Planned[] {
  const kinds = FAULT_KINDS.filter(
    (kind) =>
      (kind.on?.(topology) ?? true) && (!options.kinds || options.kinds.includes(kind.name)),
  );
  const free: Record<Domain, number> = { broker: 0, redis: 0, provider: 0, receiver: 0 };
  const planned: Planned[] = [];
  let turn: FaultKind[] = [];
  let at = 3000;
  for (;;) {
    if (turn.length === 0) turn = random.shuffle(kinds);
    const kind = turn.shift()!;
    at += random.between(Math.round(options.meanGapMs / 2), Math.round(options.meanGapMs * 1.5));
    const start = Math.max(at, free[kind.domain]);
    const holdMs = kind.hold(random, topology);
    // The rolling restart takes about 10 s per broker on a busy machine.
    const lasts = kind.name === 'broker-rolling-restart' ? 30_000 : holdMs;
    if (start + lasts > options.durationMs - 5000) break;
    planned.push({ kind, at: start, holdMs });
    free[kind.domain] = start + lasts + SETTLE_MS[kind.domain];
  }
  return planned;
}

/**
 * Runs a schedule against the system: each fault at its time (or once its domain's previous
 * fault has healed, if that took longer), held, then healed; everything in `faults`. `stop`
 * cancels what has not started; what has started is healed.
 */
export class Nemesis {
  readonly faults: FaultRecord[] = [];
  readonly #system: SoakSystem;
  readonly #random: Random;
  readonly #log: (line: string) => void;
  #stopped = false;
  readonly #domains = new Map<Domain, Promise<void>>();
  readonly #running: Promise<void>[] = [];

  constructor(system: SoakSystem, random: Random, log: (line: string) => void) {
    this.#system = system;
    this.#random = random;
    this.#log = log;
  }

  /** Runs `planned` from `origin` (the soak's clock): resolves once every fault has healed. */
  async run(planned: readonly Planned[], origin: number): Promise<void> {
    for (const [seq, plan] of planned.entries()) {
      const wait = origin + plan.at - this.#system.now();
      if (wait > 0) await sleep(wait);
      if (this.#stopped) break;
      const previous = this.#domains.get(plan.kind.domain) ?? Promise.resolve();
      const task = previous.then(() => (this.#stopped ? undefined : this.#one(seq, plan)));
      this.#domains.set(plan.kind.domain, task);
      this.#running.push(task);
    }
    await Promise.all(this.#running);
  }

  stop(): void {
    this.#stopped = true;
  }

  async #one(seq: number, plan: Planned): Promise<void> {
    const record: FaultRecord = {
      seq,
      kind: plan.kind.name,
      target: '',
      start: this.#system.now(),
    };
    this.faults.push(record);
    const random = this.#random.fork(`fault ${seq}`);
    let heal: Heal | undefined;
    try {
      heal = await plan.kind.inject({
        system: this.#system,
        random,
        record,
        holdMs: plan.holdMs,
      });
      this.#log(`fault ${seq} ${record.kind} on ${record.target}: ${record.note ?? ''}`);
      await sleep(plan.holdMs);
    } catch (error) {
      record.note = `${record.note ?? ''} (the injection failed: ${String(error)})`;
      this.#log(`fault ${seq} ${record.kind}: the injection failed: ${String(error)}`);
    }
    record.healStart = this.#system.now();
    // A heal that fails is tried again (three times): the run goes on to its checks either way.
    for (let attempt = 1; heal; attempt++) {
      try {
        await heal();
        record.healed = this.#system.now();
        this.#log(`fault ${seq} ${record.kind} healed`);
        return;
      } catch (error) {
        record.note = `${record.note ?? ''} (heal ${attempt} failed: ${String(error).split('\n')[0]})`;
        this.#log(`fault ${seq} ${record.kind}: heal ${attempt} failed: ${String(error)}`);
        if (attempt >= 3) return;
      }
    }
    record.healed = this.#system.now();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
