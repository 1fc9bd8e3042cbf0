import type { ManagedSettings } from '../managed.ts';

/**
 * The status check: while a session exists, the background reloads the licences now and then
 * (the popup's own refresh: `GET /connections` and each connected licence's `users.me`, which is
 * what makes the broker find a grant the provider revoked), so that the badge (badge.ts) says a
 * licence needs reconnecting, or the session has ended, without the popup being opened.
 *
 * It runs on a `browser.alarms` alarm, which outlives the service worker and wakes it. Each run
 * schedules the next one at the period with ±20 % jitter, drawn anew each time, so that browsers
 * that started together (a fleet's morning, a policy pushed to all) drift apart instead of calling
 * the broker in step. The alarm also repeats at the period, should a run be cut short before it
 * rescheduled. The organisation's policy may set the period or turn the check off
 * (`statusCheckMinutes`, managed.ts).
 */
export const STATUS_CHECK_ALARM = 'baton.status-check';
export const DEFAULT_STATUS_CHECK_MINUTES = 30;
/** ±20 % of the period. */
export const STATUS_CHECK_JITTER = 0.2;

const MINUTE_MS = 60_000;

/** The period in force, in minutes, or null when the organisation turned the check off. */
export function statusCheckMinutes(managed: ManagedSettings): number | null {
  const minutes = managed.statusCheckMinutes ?? DEFAULT_STATUS_CHECK_MINUTES;
  return minutes === 0 ? null : minutes;
}

/**
 * Milliseconds until the next check: the period, moved by up to ±20 % as `random` (uniform in
 * [0, 1), as `Math.random`) says.
 */
export function nextCheckDelayMs(minutes: number, random: number): number {
  const spread = 1 - STATUS_CHECK_JITTER + 2 * STATUS_CHECK_JITTER * random;
  return Math.round(minutes * MINUTE_MS * spread);
}

/** Whether an alarm should exist, and why (logged). */
export function shouldSchedule(
  signedIn: boolean,
  minutes: number | null,
): { readonly schedule: boolean; readonly reason: 'signed_in' | 'signed_out' | 'policy_off' } {
  if (!signedIn) return { schedule: false, reason: 'signed_out' };
  if (minutes === null) return { schedule: false, reason: 'policy_off' };
  return { schedule: true, reason: 'signed_in' };
}

/** What the check needs of `browser.alarms`. */
export interface AlarmsApi {
  create(name: string, info: { when: number; periodInMinutes: number }): Promise<void>;
  get(name: string): Promise<{ scheduledTime: number; periodInMinutes?: number } | undefined>;
  clear(name: string): Promise<boolean>;
}

export interface StatusCheckDeps {
  readonly alarms: AlarmsApi;
  readonly now: () => number;
  /** Uniform in [0, 1), as `Math.random`. */
  readonly random: () => number;
  /** The organisation's settings in force. */
  readonly managed: () => ManagedSettings;
  readonly log: (event: string, fields?: Record<string, string | number | boolean>) => void;
}

/**
 * Keeps the alarm in step with the session and the policy, and runs the check when it fires.
 * `follow` is told of every view written (a session begun or ended), `policyChanged` of the
 * policy; neither moves an alarm already set for the period in force, so a worker that starts
 * again (Chrome stops it after 30 s idle) does not push the next check away.
 */
export function createStatusCheck(deps: StatusCheckDeps) {
  /** The period of the alarm as set; null: none; undefined: not read from the browser yet. */
  let scheduled: number | null | undefined = undefined;
  let signedIn = false;
  let queue: Promise<void> = Promise.resolve();

  function serially(work: () => Promise<void>): Promise<void> {
    queue = queue.then(work).catch((error: unknown) => {
      deps.log('check.schedule_failed', { error: error instanceof Error ? error.name : 'unknown' });
    });
    return queue;
  }

  async function schedule(minutes: number): Promise<void> {
    const delay = nextCheckDelayMs(minutes, deps.random());
    await deps.alarms.create(STATUS_CHECK_ALARM, {
      when: deps.now() + delay,
      periodInMinutes: minutes,
    });
    scheduled = minutes;
    deps.log('check.scheduled', { minutes, in_s: Math.round(delay / 1000) });
  }

  async function reconcile(): Promise<void> {
    if (scheduled === undefined)
      scheduled = (await deps.alarms.get(STATUS_CHECK_ALARM))?.periodInMinutes ?? null;
    const minutes = statusCheckMinutes(deps.managed());
    const decision = shouldSchedule(signedIn, minutes);
    if (!decision.schedule || minutes === null) {
      if (scheduled !== null) {
        await deps.alarms.clear(STATUS_CHECK_ALARM);
        scheduled = null;
        deps.log('check.cleared', { reason: decision.reason });
      }
      return;
    }
    if (scheduled !== minutes) await schedule(minutes);
  }

  return {
    /** A view was written: a session may have begun or ended. */
    follow(view: { readonly signedIn: boolean }): Promise<void> {
      if (view.signedIn === signedIn && scheduled !== undefined) return queue;
      signedIn = view.signedIn;
      return serially(reconcile);
    },
    /** The organisation's policy changed: the period may have. */
    policyChanged(): Promise<void> {
      return serially(reconcile);
    },
    /**
     * An alarm fired. Ours, with a session and the check on: the next one is scheduled first (a
     * worker stopped during the check still has it), then `check` runs. Otherwise the alarm is
     * put right (cleared) and nothing is asked of the broker.
     */
    async fired(name: string, check: () => Promise<void>): Promise<void> {
      if (name !== STATUS_CHECK_ALARM) return;
      let run = false;
      await serially(async () => {
        const minutes = statusCheckMinutes(deps.managed());
        const decision = shouldSchedule(signedIn, minutes);
        if (!decision.schedule || minutes === null) {
          scheduled = undefined;
          await reconcile();
          return;
        }
        await schedule(minutes);
        run = true;
      });
      if (!run) return;
      deps.log('check.run');
      await check();
    },
  };
}
