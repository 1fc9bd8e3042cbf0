/**
 * The checker on histories made by hand: a clean one passes every invariant, and each defect
 * written into one is caught by the invariant that owns it (and only named, not failed, where a
 * documented window explains it).
 */
import { describe, expect, it } from 'vitest';
import { check, type Verdict } from './checker.ts';
import type { Delivery } from './event-log.ts';
import type { CallRecord, History, TokenRequest } from './history.ts';

const REF = 'ses_session0';

function token(seq: number, fields: Partial<TokenRequest>): TokenRequest {
  return {
    seq,
    grant: 'refresh_token',
    presented: `rt${seq}`,
    chain: 'code1',
    pid: 100,
    start: seq * 1000,
    answered: seq * 1000 + 10,
    end: seq * 1000 + 11,
    status: 200,
    issued: { accessToken: `at${seq + 1}`, refreshToken: `rt${seq + 1}` },
    delivered: true,
    outcome: 'rotated',
    ...fields,
  };
}

/** The refresh token rt1 presented again by instance 1, and refused as used. */
const reusedByAnother = (history: History) =>
  history.tokens.push(
    token(3, {
      presented: 'rt1',
      pid: 101,
      outcome: 'rejected',
      status: 400,
      description: 'The refresh token was already used.',
    }),
  );

function call(fields: Partial<CallRecord>): CallRecord {
  return {
    user: 0,
    session: 'u0.0',
    connection: 'c1',
    license: 'lic-1001',
    instance: 0,
    path: 'users.me',
    start: 5000,
    end: 5010,
    status: 200,
    gotLicense: 'lic-1001',
    gotEmail: 'lotte.vermeulen@example.be',
    ...fields,
  };
}

function delivery(id: string, type: string, at: number, fields: Partial<Delivery> = {}): Delivery {
  return {
    at,
    id,
    verified: true,
    type,
    timestamp: new Date(at).toISOString(),
    sessionRef: REF,
    ...(type === 'session.ended' ? { connections: ['c1'] } : { connection: 'c1' }),
    bodyHash: `${id}-body`,
    ...fields,
  };
}

/**
 * One user's clean life: a sign-in connecting lic-1001 (code1), two refreshes, calls of both
 * kinds through every instance, the final probes, a sign-out, the events of it all, and Redis
 * back to its baseline.
 */
function clean(): History {
  return {
    seed: 'test',
    topology: 'standalone',
    epoch: 0,
    phases: { usersFrom: 0, usersTo: 20_000, healedAt: 15_000, quietUntil: 21_000 },
    lifetimeS: 6,
    leaseMs: 6500,
    sessions: [
      { label: 'u0.0', user: 0, ref: REF, created: 900, signOutSent: 30_000, signedOut: 30_010 },
    ],
    calls: [
      call({ start: 2000, end: 2010 }),
      call({ start: 3000, end: 3010, path: 'echo', instance: 1, gotChain: 'code1' }),
      call({ start: 4000, end: 4010, instance: 2 }),
    ],
    flows: [
      {
        user: 0,
        session: 'u0.0',
        license: 'lic-1001',
        start: 800,
        end: 1000,
        via: [0, 1, 2],
        code: 'code1',
        connection: 'c1',
        outcome: 'created',
        joined: false,
      },
    ],
    removals: [],
    signOuts: [
      {
        user: 0,
        session: 'u0.0',
        instance: 1,
        start: 30_000,
        end: 30_010,
        status: 204,
        connections: ['c1'],
      },
    ],
    revocations: [],
    faults: [],
    lives: [0, 1, 2].map((instance) => ({ instance, pid: 100 + instance, started: 0 })),
    pauses: [],
    tokens: [
      token(0, { grant: 'auth_code', presented: 'code1' }),
      token(1, { presented: 'rt0' }),
      token(2, { presented: 'rt1' }),
    ],
    api: [],
    deliveries: [
      delivery('msg_created', 'connection.created', 1100),
      delivery('msg_ended', 'session.ended', 30_100),
    ],
    connectionProbes: [0, 1, 2].map((instance) => ({
      session: 'u0.0',
      connection: 'c1',
      license: 'lic-1001' as const,
      instance,
      listed: 'connected' as const,
      status: 200,
      gotLicense: 'lic-1001',
    })),
    sessionProbes: [0, 1, 2].map((instance) => ({ session: 'u0.0', instance, status: 200 })),
    redis: {
      problems: [],
      sessionKeys: {},
      leftBehind: [],
      undelivered: [],
      baselineBytes: 900_000,
      finalBytes: 950_000,
      expiringBytes: 10_000,
      keys: 12,
    },
    logs: [],
  };
}

/**
 * The clean life, with broker 0 paused past its lease holding rt1's answer: instance 1 presents
 * rt1 again at 9 s, refused as used (disconnected), and a connection.reconnected follows at 12 s.
 */
function pausedHolderReused(): History {
  const history = clean();
  history.pauses.push({ instance: 0, pid: 100, from: 2020, to: 12_000 });
  history.tokens.push(
    token(3, {
      presented: 'rt1',
      pid: 101,
      start: 9000,
      outcome: 'rejected',
      status: 400,
      description: 'The refresh token was already used.',
    }),
  );
  history.deliveries.splice(
    1,
    0,
    delivery('msg_disconnected', 'connection.disconnected', 9100, { reason: 'refresh_rejected' }),
    delivery('msg_reconnected', 'connection.reconnected', 12_100),
  );
  return history;
}

const verdict = (history: History): Verdict => check(history, { recoveryBoundMs: 30_000 });

/** The violations' names, by invariant. */
const broken = (history: History): string[] =>
  verdict(history).violations.map((violation) => `${violation.invariant} ${violation.what}`);

describe('the checker', () => {
  it('passes a clean history on every invariant', () => {
    expect(broken(clean())).toEqual([]);
    expect(verdict(clean()).explained).toEqual([]);
  });

  describe('C1, each refresh token presented once', () => {
    it('catches a refresh token presented again after its rotation reached a live broker', () => {
      const history = clean();
      reusedByAnother(history);
      expect(broken(history)).toContain('C1 a refresh token presented twice');
    });

    it('names the second use after a planned lost answer, and the reuse must fail', () => {
      const history = clean();
      history.tokens[2] = token(2, { presented: 'rt1', outcome: 'dropped' });
      delete history.tokens[2]!.delivered;
      delete history.tokens[2]!.issued;
      history.tokens.push(
        token(3, {
          presented: 'rt1',
          outcome: 'rejected',
          status: 400,
          description: 'The refresh token was already used.',
        }),
      );
      history.faults.push({
        seq: 0,
        kind: 'provider-lost-answer',
        target: 'provider',
        start: 1500,
        healStart: 4000,
        healed: 4000,
      });
      const result = verdict(history);
      expect(result.byInvariant.C1).toBe(0);
      expect(result.explained.map((entry) => `${entry.invariant} ${entry.window}`)).toEqual([
        expect.stringMatching(/^C1 a planned lost answer/),
        expect.stringMatching(/^C2 a planned lost answer/),
      ]);
      history.tokens[3] = token(3, { presented: 'rt1' });
      expect(broken(history)).toContain('C1 the provider accepted a used refresh token');
    });

    it('names a second use after the first presenter was killed holding the answer', () => {
      const history = clean();
      history.lives[0]!.ended = 2050;
      history.lives[0]!.how = 'SIGKILL';
      reusedByAnother(history);
      const result = verdict(history);
      expect(result.byInvariant.C1).toBe(0);
      expect(result.explained[0]?.window).toMatch(
        /killed between the provider's answer and its write/,
      );
    });

    it('names a stored pair lost when standalone Redis was killed within its AOF delay, and no later kill', () => {
      const history = clean();
      reusedByAnother(history);
      const stored = history.tokens[2]!.end ?? 0;
      history.tokens[3]!.start = stored + 4000;
      const killAt = (start: number) =>
        (history.faults = [
          {
            seq: 0,
            kind: 'redis-kill-master',
            target: 'master',
            start,
            healStart: start + 500,
            healed: start + 1000,
          },
        ]);
      killAt(stored + 1500);
      expect(verdict(history).byInvariant.C1).toBe(0);
      expect(verdict(history).explained[0]?.window).toMatch(/not yet in its AOF/);
      killAt(stored + 2500);
      expect(broken(history)).toContain('C1 a refresh token presented twice');
      killAt(stored + 1500);
      history.topology = 'sentinel';
      expect(broken(history)).toContain('C1 a refresh token presented twice');
    });

    it('names a presentation cut when its broker went away, once the token is refused as used', () => {
      const history = clean();
      history.tokens[2] = token(2, { presented: 'rt1', pid: 102, outcome: 'abandoned' });
      delete history.tokens[2]!.issued;
      delete history.tokens[2]!.delivered;
      history.lives[2] = { instance: 2, pid: 102, started: 0, ended: 2005, how: 'SIGKILL' };
      reusedByAnother(history);
      const result = verdict(history);
      expect(result.byInvariant.C1).toBe(0);
      expect(result.byInvariant.C2).toBe(0);
      expect(result.explained[0]?.window).toMatch(
        /killed between the provider's answer and its write/,
      );
      // Had the provider not rotated it, the second use would have rotated: no reuse at all.
      history.tokens[3] = token(3, { presented: 'rt1', pid: 101 });
      expect(verdict(history).explained).toEqual([]);
    });

    it('names a rotation its broker had given up on (the answer came past its token timeout)', () => {
      const history = clean();
      history.tokens[2] = token(2, { presented: 'rt1', pid: 102 });
      reusedByAnother(history);
      expect(verdict(history).byInvariant.C1).toBe(1);
      // The broker says it gave up: a lost answer, though the tap's write still went through.
      history.logs.push({
        instance: 2,
        pid: 102,
        line: '{"level":40,"time":2300,"connection":"c1","failure":"lost","msg":"refresh failed; backing off"}',
      });
      const result = verdict(history);
      expect(result.byInvariant.C1).toBe(0);
      expect(result.byInvariant.C2).toBe(0);
      expect(result.explained[0]?.window).toMatch(/never reached its broker/);
    });

    it('names a drop by the planned lost answer, armed after the request was sent', () => {
      const history = clean();
      history.tokens[2] = token(2, { presented: 'rt1', outcome: 'dropped', answered: 2500 });
      delete history.tokens[2]!.issued;
      delete history.tokens[2]!.delivered;
      history.faults.push({
        seq: 0,
        kind: 'provider-lost-answer',
        target: 'provider',
        start: 2100,
        healStart: 5000,
        healed: 5000,
      });
      reusedByAnother(history);
      const result = verdict(history);
      expect(result.byInvariant.C1).toBe(0);
      expect(result.explained[0]?.window).toMatch(/planned lost answer/);
    });

    it('names a request its broker sent just before it was killed (it reached the tap after)', () => {
      const history = clean();
      history.lives[2] = { instance: 2, pid: 102, started: 0, ended: 1990, how: 'SIGKILL' };
      history.tokens[2] = token(2, { presented: 'rt1', pid: 102 });
      reusedByAnother(history);
      const result = verdict(history);
      expect(result.byInvariant.C1).toBe(0);
      expect(result.explained[0]?.window).toMatch(/broker killed/);
    });

    it('names a second use after its holder stored the pair late, the store down past its lease', () => {
      const history = clean();
      reusedByAnother(history);
      expect(verdict(history).byInvariant.C1).toBe(1);
      history.logs.push({
        instance: 0,
        pid: 100,
        line: JSON.stringify({
          level: 40,
          time: history.epoch + 2900,
          connection: 'c1',
          written: true,
          msg: 'the store answered again; stored the rotated pair unless a newer one was there',
        }),
      });
      const result = verdict(history);
      expect(result.byInvariant.C1).toBe(0);
      expect(result.explained[0]?.window).toMatch(/store stayed down past the lease/);
    });

    it('names a late holder paused past its lease, and accepts its reconnection (a5afb79)', () => {
      const history = pausedHolderReused();
      // The holder wakes, stores its newer pair over the disconnection, and refreshes it later.
      history.tokens.push(token(13, { presented: 'rt3', pid: 100 }));
      const result = verdict(history);
      expect(result.violations).toEqual([]);
      expect(result.explained[0]?.window).toMatch(/paused past its lease/);
    });

    it("accepts a late holder's reconnection that only its broker's line shows (nothing rotated after)", () => {
      const history = pausedHolderReused();
      expect(broken(history)).toContain('C4 an event reporting no change');
      history.logs.push({
        instance: 0,
        pid: 100,
        line: JSON.stringify({
          level: 30,
          time: history.epoch + 12_050,
          connection: 'c1',
          msg: 'refresh finished after its lease, and another holder had presented the refresh token it used up: stored the newest pair over that disconnection',
        }),
      });
      expect(broken(history)).toEqual([]);
    });
  });

  describe('C2, nothing lost', () => {
    it('catches a grant that ends by the refusal of a used token outside any window', () => {
      const history = clean();
      reusedByAnother(history);
      expect(broken(history)).toContain('C2 a grant lost');
    });

    it('catches a session that stopped being valid without a sign-out', () => {
      const history = clean();
      history.sessions[0]!.lost = 7000;
      expect(broken(history)).toEqual(['C2 a session lost']);
    });

    it('catches a connection that is not connected at the end on one instance', () => {
      const history = clean();
      history.connectionProbes[2] = {
        ...history.connectionProbes[2]!,
        listed: 'disconnected',
        status: 401,
        error: 'reauthorization_required',
      };
      expect(broken(history)).toContain('C2 a connection not connected at the end');
    });

    it("accepts a code refused because its license's grants were revoked after it was issued", () => {
      const history = clean();
      // A second sign-in: the sandbox revokes every grant of lic-1001 between the code's issue and
      // its exchange, which forgets the code too.
      history.flows.push({
        user: 0,
        session: 'u0.0',
        license: 'lic-1001',
        start: 6000,
        end: 6200,
        via: [0, 0, 0],
        code: 'code2',
        outcome: 'failed',
        step: '/auth/callback',
        joined: true,
      });
      history.tokens.push(
        token(3, {
          grant: 'auth_code',
          presented: 'code2',
          chain: 'code2',
          start: 6100,
          outcome: 'rejected',
          status: 400,
          description: 'The authorization code is unknown or was already used.',
        }),
      );
      expect(verdict(history).byInvariant.C2).toBe(1);
      history.revocations.push({ at: 6050, by: 'sandbox', license: 'lic-1001' });
      expect(verdict(history).byInvariant.C2).toBe(0);
    });

    it('catches a reauthorization answer while the grant stood, and not one for a revoked grant', () => {
      const history = clean();
      history.calls.push(
        call({ start: 8000, end: 8010, status: 401, error: 'reauthorization_required' }),
      );
      expect(broken(history)).toContain('C2 disconnected while its grant stood');
      history.revocations.push({ at: 7000, by: 'tap', chain: 'code1' });
      history.connectionProbes = [];
      expect(broken(history)).not.toContain('C2 disconnected while its grant stood');
    });

    it('catches a connection that vanished (not_found, never removed)', () => {
      const history = clean();
      history.calls.push(call({ start: 8000, end: 8010, status: 404, error: 'not_found' }));
      expect(broken(history)).toEqual(['C2 a connection vanished']);
    });
  });

  describe('C3, every answer documented, with the caller’s own data', () => {
    it("catches another license's data", () => {
      const history = clean();
      history.calls.push(call({ gotLicense: 'lic-2001' }));
      expect(broken(history)).toEqual(["C3 another license's data"]);
    });

    it("catches another grant's token at the license API", () => {
      const history = clean();
      history.flows.push({
        ...history.flows[0]!,
        session: 'u1.0',
        user: 1,
        code: 'code2',
        connection: 'c2',
      });
      history.calls.push(call({ path: 'echo', gotChain: 'code2' }));
      expect(broken(history)).toContain("C3 another grant's data");
    });

    it('catches a 500, and a 503 without Retry-After, and lets a 503 with it pass', () => {
      const history = clean();
      history.calls.push(call({ status: 503, error: 'upstream_unavailable', retryAfter: '1' }));
      expect(broken(history)).toEqual([]);
      history.calls.push(call({ status: 500, error: 'server_error' }));
      history.calls.push(call({ status: 503, error: 'upstream_unavailable' }));
      expect(broken(history)).toEqual(['C3 a 500', 'C3 a 5xx without Retry-After']);
    });

    it('catches an old token served after its sign-out, past the grace', () => {
      const history = clean();
      history.calls.push(call({ start: 31_000, end: 31_010, afterSignOut: 1000 }));
      expect(broken(history)).toEqual([]);
      history.calls.push(call({ start: 35_000, end: 35_010, afterSignOut: 5000 }));
      history.calls.push(
        call({ start: 35_000, end: 35_010, afterSignOut: 5000, status: 404, error: 'not_found' }),
      );
      expect(broken(history)).toEqual(['C3 served after sign-out', 'C3 served after sign-out']);
      history.calls.splice(
        -2,
        2,
        call({
          start: 35_000,
          end: 35_010,
          afterSignOut: 5000,
          status: 401,
          error: 'invalid_session',
        }),
      );
      expect(broken(history)).toEqual([]);
    });

    it('lets an instance that was down not answer, and catches a live one that did not', () => {
      const history = clean();
      history.calls.push(call({ start: 8000, end: 28_000, status: 0 }));
      expect(broken(history)).toEqual(['C3 a live instance did not answer']);
      history.lives[0]!.ended = 7500;
      history.lives[0]!.how = 'SIGKILL';
      history.lives.push({ instance: 0, pid: 200, started: 12_000 });
      expect(broken(history)).toEqual([]);
    });

    it("lets the license API's own 503 through during its burst only", () => {
      const history = clean();
      history.calls.push(call({ start: 8000, end: 8010, status: 503, retryAfter: '1' }));
      expect(broken(history)).toEqual(["C3 a license API's answer the soak never asked for"]);
      history.faults.push({
        seq: 0,
        kind: 'license-api-503',
        target: 'provider',
        start: 7000,
        healStart: 9000,
        healed: 9000,
      });
      expect(broken(history)).toEqual([]);
    });

    it('catches a 500 on a route the users do not call through the proxy, from the access log', () => {
      const history = clean();
      const line = (status: number) =>
        `{"level":30,"time":9000,"method":"GET","path":"/auth/start","status":${status},"ms":2,"msg":"request completed"}`;
      history.logs.push({ instance: 0, pid: 100, line: line(503) });
      expect(broken(history)).toEqual([]);
      history.logs.push({ instance: 0, pid: 100, line: line(500) });
      expect(broken(history)).toEqual(['C3 a 500']);
    });

    it("lets the license API's 401 through only for a grant revoked during the call", () => {
      const history = clean();
      history.calls.push(call({ start: 8000, end: 11_000, status: 401 }));
      history.revocations.push({ at: 11_500, by: 'sandbox', license: 'lic-1001' });
      expect(broken(history)).toContain("C3 a license API's answer the soak never asked for");
      history.revocations[0]!.at = 9000;
      expect(broken(history)).not.toContain("C3 a license API's answer the soak never asked for");
    });
  });

  describe('C4, one event per change, at least once, in order', () => {
    it('catches a change without its event', () => {
      const history = clean();
      history.deliveries.shift();
      expect(broken(history)).toContain('C4 a change without its event');
    });

    it('catches one change recorded twice (two ids)', () => {
      const history = clean();
      history.deliveries.splice(1, 0, delivery('msg_created_again', 'connection.created', 1200));
      expect(broken(history)).toContain('C4 an event out of order or twice');
    });

    it('accepts the same id delivered again, and catches it with another body', () => {
      const history = clean();
      history.deliveries.splice(1, 0, delivery('msg_created', 'connection.created', 1300));
      expect(broken(history)).toEqual([]);
      history.deliveries[1] = delivery('msg_created', 'connection.created', 1300, {
        bodyHash: 'other',
      });
      expect(broken(history)).toEqual(['C4 one event id, two bodies']);
    });

    it('catches events out of order, and an event reporting no change', () => {
      const history = clean();
      history.deliveries.unshift(delivery('msg_removed', 'connection.removed', 1050));
      expect(broken(history)).toContain('C4 an event out of order or twice');
      const phantom = clean();
      phantom.deliveries.splice(
        1,
        0,
        delivery('msg_gone', 'connection.disconnected', 5000, { reason: 'refresh_rejected' }),
      );
      expect(broken(phantom)).toContain('C4 an event reporting no change');
    });

    it('catches a delivery that does not verify, and an event after its session ended', () => {
      const history = clean();
      history.deliveries[0]!.verified = false;
      history.deliveries.push(delivery('msg_late', 'connection.removed', 31_000));
      expect(broken(history)).toEqual([
        'C4 a delivery that does not verify',
        'C4 an event after its session ended',
      ]);
    });
  });

  describe('C5, calls succeed again after each heal', () => {
    /** A call through `instance` answered 503 upstream_unavailable after 10 ms. */
    const failing = (start: number, instance: number, retryAfter = '5') =>
      call({
        start,
        end: start + 10,
        instance,
        status: 503,
        error: 'upstream_unavailable',
        retryAfter,
      });
    const killOfBroker0 = (seq: number, start: number, healStart: number, healed: number) => ({
      seq,
      kind: 'broker-kill',
      target: 'broker 0',
      instance: 0,
      start,
      healStart,
      healed,
    });

    it('catches calls that fail longer than the bound after a heal, and not those of the next fault', () => {
      const history = clean();
      history.phases.usersTo = 100_000;
      history.faults.push({
        seq: 0,
        kind: 'redis-pause',
        target: 'master',
        start: 6000,
        healStart: 7000,
        healed: 7100,
      });
      history.calls.push(
        call({
          start: 45_000,
          end: 45_010,
          status: 503,
          error: 'upstream_unavailable',
          retryAfter: '1',
        }),
      );
      expect(broken(history)).toEqual(['C5 calls did not recover in time']);
      history.faults.push({
        seq: 1,
        kind: 'redis-latency',
        target: 'links',
        start: 40_000,
        healStart: 50_000,
        healed: 50_000,
      });
      expect(broken(history)).toEqual([]);
    });

    it('leaves a call in flight when the next fault began to that fault (a broker paused under it)', () => {
      const history = clean();
      history.phases.usersTo = 100_000;
      history.faults.push(
        {
          seq: 0,
          kind: 'provider-lost-answer',
          target: 'provider',
          start: 1000,
          healStart: 2000,
          healed: 2000,
        },
        {
          seq: 1,
          kind: 'broker-pause',
          target: 'broker 0',
          instance: 0,
          start: 40_000,
          healStart: 50_000,
          healed: 50_010,
        },
      );
      // Started 50 ms before the pause, on the paused instance: answered once it woke.
      history.calls.push(
        call({
          start: 39_950,
          end: 50_020,
          status: 503,
          error: 'upstream_unavailable',
          retryAfter: '5',
        }),
      );
      expect(broken(history)).toEqual([]);
      expect(verdict(history).recoveries[0]!.recoveryMs).toBe(0);
    });

    it("counts in a failover's outage only the failures no other fault had a hand in", () => {
      const history = clean();
      history.phases.usersTo = 100_000;
      history.faults.push(
        {
          seq: 0,
          kind: 'redis-kill-master',
          target: 'master',
          start: 1000,
          healStart: 6000,
          healed: 27_000,
          failoverMs: 2700,
        },
        {
          seq: 1,
          kind: 'provider-token-503',
          target: 'provider',
          start: 8000,
          healStart: 11_000,
          healed: 11_000,
        },
      );
      history.calls.push(
        call({
          start: 2000,
          end: 4000,
          status: 503,
          error: 'upstream_unavailable',
          retryAfter: '5',
        }),
        // In flight when the token endpoint began answering 503: that fault's.
        call({
          start: 5000,
          end: 13_000,
          status: 503,
          error: 'upstream_unavailable',
          retryAfter: '5',
        }),
      );
      expect(verdict(history).recoveries[0]).toMatchObject({ outageMs: 3000, failoverMs: 2700 });
    });

    it('counts the calls through the other instances that fail while a broker is down, for a lease', () => {
      const history = clean();
      history.phases.usersTo = 100_000;
      history.faults.push(killOfBroker0(0, 20_000, 22_000, 23_000));
      // Through instance 1 during the kill, and within a lease of it (a lock it held); then later.
      history.calls.push(failing(21_000, 1), failing(26_000, 2), failing(40_000, 1));
      expect(verdict(history).recoveries[0]).toMatchObject({ recoveryMs: 0, othersFailed: 2 });
    });

    it('leaves to Redis the failures through other instances while it comes back, not to a broker killed meanwhile', () => {
      const history = clean();
      history.phases.usersTo = 100_000;
      history.faults.push(killOfBroker0(0, 20_000, 28_000, 29_000), {
        seq: 1,
        kind: 'redis-kill-master',
        target: 'master',
        start: 20_001,
        healStart: 22_000,
        healed: 22_200,
      });
      // Through instance 1 as the brokers reconnect to the restarted Redis.
      history.calls.push(failing(22_500, 1));
      const [kill, redis] = verdict(history).recoveries;
      expect(kill).toMatchObject({ othersFailed: 0 });
      expect(redis).toMatchObject({ recoveryMs: 510 });
    });

    it('leaves to the provider the back-off it still runs after its heal, not to a broker restarted meanwhile', () => {
      const history = clean();
      history.phases.usersTo = 100_000;
      history.faults.push(
        {
          seq: 0,
          kind: 'provider-token-503',
          target: 'provider',
          start: 20_000,
          healStart: 25_000,
          healed: 25_000,
        },
        killOfBroker0(1, 21_000, 23_000, 24_000),
      );
      // Through the restarted instance, as the refresh's back-off runs out.
      history.calls.push(failing(26_000, 0, '1'));
      const [provider, kill] = verdict(history).recoveries;
      expect(provider).toMatchObject({ recoveryMs: 1010 });
      expect(kill).toMatchObject({ recoveryMs: 0 });
    });
  });

  describe('a sign-out a failover undid', () => {
    /** Sentinel: the sign-out answered 204, its session.ended never came, its keys stayed. */
    const undone = () => {
      const history = clean();
      history.topology = 'sentinel';
      history.deliveries = history.deliveries.filter((d) => d.type !== 'session.ended');
      history.redis!.sessionKeys['baton:{sid}:session'] = 1;
      history.redis!.leftBehind!.push('session u0.0 baton:{sid}:session, TTL 2590394 s');
      return history;
    };
    const unacknowledged = {
      instance: 1,
      pid: 101,
      line: JSON.stringify({
        level: 40,
        time: 30_005,
        acknowledged: 0,
        wanted: 1,
        msg: 'a write was not acknowledged by enough Redis replicas in time: a failover now could lose it',
      }),
    };
    const failover = {
      seq: 0,
      kind: 'redis-pause',
      target: 'master',
      start: 29_000,
      healStart: 33_000,
      healed: 40_000,
    };

    it('names it when its broker logged an unacknowledged write and Redis failed over', () => {
      const history = undone();
      history.logs.push(unacknowledged);
      history.faults.push(failover);
      const result = verdict(history);
      expect(result.violations).toEqual([]);
      expect(result.explained.map((e) => `${e.invariant} ${e.window}`)).toEqual([
        expect.stringMatching(/^C4 a failover lost a write no replica had acknowledged/),
      ]);
    });

    it('catches it otherwise: no such line, no fault of Redis, or a standalone Redis', () => {
      const expected = ['C4 a change without its event', 'C6 a session key left after sign-out'];
      const noLine = undone();
      noLine.faults.push(failover);
      expect(broken(noLine)).toEqual(expected);
      const noFault = undone();
      noFault.logs.push(unacknowledged);
      expect(broken(noFault)).toEqual(expected);
      const standalone = undone();
      standalone.topology = 'standalone';
      standalone.logs.push(unacknowledged);
      standalone.faults.push(failover);
      expect(broken(standalone)).toEqual(expected);
    });
  });

  describe('C6, nothing unbounded', () => {
    it('catches a key without a TTL, a session key left after sign-out, and memory not back', () => {
      const history = clean();
      history.redis!.problems.push('baton:{sid}:leak: without a TTL (1)');
      history.redis!.sessionKeys['baton:{sid}:connection:<id>'] = 1;
      history.redis!.finalBytes = 9_000_000;
      expect(broken(history)).toEqual([
        'C6 a key undocumented or without a TTL',
        'C6 a session key left after sign-out',
        'C6 Redis memory not back to its baseline',
      ]);
    });
  });
});
