// @ts-check
import { el, time } from './dom.js';

/**
 * What the console shows, drawn from the API's answers (the operators' contract,
 * server/src/admin/types.ts): pure functions from data to elements, no call and no state.
 * @typedef {import('../../../../../admin/types.ts').Overview} Overview
 * @typedef {import('../../../../../admin/types.ts').ConnectionView} ConnectionView
 * @typedef {import('../../../../../admin/types.ts').DeadLetterView} DeadLetterView
 * @typedef {import('../../../../../admin/types.ts').ReencryptJob} ReencryptJob
 * @typedef {Overview['census']['state']} CensusState
 * @typedef {[term: string, value: string | Node, field: string]} Fact
 */

/** The terms and values of a <dl>; each value carries its `data-field` name. */
export function facts(/** @type {Fact[]} */ list) {
  return list.flatMap(([term, value, field]) => [
    el('dt', { text: term }),
    el('dd', { attrs: { 'data-field': field } }, [value]),
  ]);
}

/**
 * A count, as shown, its thousands grouped (typed: a count that may be null must say what null
 * means).
 */
const count = (/** @type {number} */ n) => n.toLocaleString('en-US');

/**
 * When a figure was counted: `counted 06:12 UTC` today, else with its day; its ISO form kept in
 * `datetime`.
 * @param {string} iso @param {number} now
 */
function countedAt(iso, now) {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return el('span', { text: `counted ${iso}` });
  const stamp = at.toISOString();
  const day = stamp.slice(0, 10) === new Date(now).toISOString().slice(0, 10);
  const text = `${day ? '' : `${stamp.slice(0, 10)} `}${stamp.slice(11, 16)} UTC`;
  return el('span', {}, ['counted ', el('time', { text, attrs: { datetime: iso } })]);
}

/** Sessions as the overview counted them: `1,234 (counted 06:12 UTC)`, or why there is no figure. */
function sessionsValue(/** @type {Overview} */ o, /** @type {number} */ now) {
  if (o.sessions === null || o.census.takenAt === null) return 'not counted yet';
  return el('span', {}, [`${count(o.sessions)} (`, countedAt(o.census.takenAt, now), ')']);
}

/** A group of facts under a heading. */
function group(/** @type {string} */ title, /** @type {Fact[]} */ list) {
  return el('div', {}, [el('h3', { text: title }), el('dl', { className: 'facts' }, facts(list))]);
}

/** @param {Record<string, number>} counts @param {(key: string) => string} term @param {string} prefix */
const counted = (counts, term, prefix) =>
  Object.entries(counts).map(
    ([key, n]) => /** @type {Fact} */ ([term(key), count(n), `${prefix}.${key}`]),
  );

/**
 * The overview's groups: build, Redis, sessions and connections, refreshes, events.
 * @param {Overview} o @param {number} now the time it is (for the day a count was taken on)
 */
export function overviewGroups(o, now) {
  const masters = o.redis.masters.map((master, index) => {
    const health = master.up
      ? el('span', {
          className: 'up',
          text: master.latencyMs === null ? 'up' : `up, ${Math.round(master.latencyMs)} ms`,
        })
      : el('span', { className: 'down', text: 'not answering' });
    return /** @type {Fact} */ ([master.address, health, `redis.master.${index}`]);
  });
  const { byStatus, byKeyId, activeKeyId } = o.connections;
  return [
    group('Build', [
      ['Version', o.build.version, 'build.version'],
      ['Revision', o.build.revision.slice(0, 12), 'build.revision'],
      ['Data format', count(o.dataFormat), 'dataFormat'],
    ]),
    group('Redis', [['Topology', o.redis.topology, 'redis.topology'], ...masters]),
    group('Sessions and connections', [
      ['Sessions', sessionsValue(o, now), 'sessions'],
      ['Connected', count(byStatus.connected), 'connections.connected'],
      ['Disconnected', count(byStatus.disconnected), 'connections.disconnected'],
      ['Active key', activeKeyId, 'connections.activeKeyId'],
      ...(byKeyId === null ? [] : counted(byKeyId, (key) => `Under key ${key}`, 'keyId')),
    ]),
    group('Refreshes, last hour', [
      ['Refreshed', count(o.refreshes.refreshed), 'refreshes.refreshed'],
      ['Rejected', count(o.refreshes.rejected), 'refreshes.rejected'],
      ['Transient failures', count(o.refreshes.transient), 'refreshes.transient'],
      ['Lost', count(o.refreshes.lost), 'refreshes.lost'],
    ]),
    group('Events', [
      ['Delivery', o.events.enabled ? 'on' : 'off', 'events.enabled'],
      ['Waiting', count(o.events.waiting), 'events.waiting'],
      ['Sessions due', count(o.events.sessionsDue), 'events.sessionsDue'],
      ['Dead letters', count(o.events.deadLetters), 'events.deadLetters'],
      ...counted(o.events.deadLettersByReason, (reason) => `Dead: ${reason}`, 'deadLetters'),
    ]),
  ];
}

/** The re-encryption job's progress, as facts. */
export function reencryptFacts(/** @type {ReencryptJob} */ job) {
  const missing = Object.entries(job.missingKey).map(([key, count]) => `${key}: ${count}`);
  return facts([
    ['State', job.state, 'reencrypt.state'],
    ['Active key', job.activeKeyId, 'reencrypt.activeKeyId'],
    ['Started (UTC)', time(job.startedAt), 'reencrypt.startedAt'],
    ['Started by', job.startedBy ?? '—', 'reencrypt.startedBy'],
    ['Finished (UTC)', time(job.finishedAt), 'reencrypt.finishedAt'],
    ['Records seen', count(job.seen), 'reencrypt.seen'],
    ['Sealed again', count(job.resealed), 'reencrypt.resealed'],
    ['Already current', count(job.alreadyCurrent), 'reencrypt.alreadyCurrent'],
    [
      'Under a missing key',
      missing.length === 0 ? 'none' : missing.join(', '),
      'reencrypt.missingKey',
    ],
    ['Error', job.error ?? 'none', 'reencrypt.error'],
  ]);
}

/** What the census status line says of the census's state (the figures say when they were taken). */
export function censusStatus(/** @type {CensusState} */ state) {
  if (state === 'running') return 'Counting sessions and records…';
  if (state === 'paused') return 'The last count was paused: Count now resumes it.';
  if (state === 'failed') return 'The last count failed: Count now tries again.';
  return '';
}

/** What the job's button says: none while it runs. */
export function reencryptVerb(/** @type {ReencryptJob['state']} */ state) {
  if (state === 'running') return null;
  return state === 'paused' || state === 'failed' ? 'Resume' : 'Start';
}

/** A table row: its cells, then an actions cell when `actions` is given (operators). */
function row(
  /** @type {Record<string, string>} */ attrs,
  /** @type {HTMLElement[]} */ cells,
  /** @type {HTMLElement[] | null} */ actions,
) {
  if (actions !== null) cells.push(el('td', {}, [el('div', { className: 'actions' }, actions)]));
  return el('tr', { attrs }, cells);
}

/** One connection's row. */
export function connectionRow(
  /** @type {ConnectionView} */ c,
  /** @type {HTMLElement[] | null} */ actions,
) {
  return row(
    { 'data-connection-id': c.id, 'data-status': c.status },
    [
      el('td', { className: 'code', text: c.id }),
      el('td', { className: 'code', text: c.sessionRef }),
      el('td', { className: 'code', text: c.licence }),
      el('td', { className: `status-${c.status}`, text: c.status }),
      el('td', {}, [time(c.createdAt)]),
      el('td', {}, [time(c.lastRefreshAt)]),
      el('td', { text: c.lastRefreshOutcome ?? '—' }),
      el('td', { className: 'word', text: c.disconnectedReason ?? '—' }),
      el('td', {}, [time(c.lastUsedAt)]),
    ],
    actions,
  );
}

/** One dead letter's row. */
export function letterRow(
  /** @type {DeadLetterView} */ d,
  /** @type {HTMLElement[] | null} */ actions,
) {
  return row(
    { 'data-event-id': d.id },
    [
      el('td', { className: 'code', text: d.id }),
      el('td', { className: 'word', text: d.type }),
      el('td', { className: 'code', text: d.sessionRef ?? '—' }),
      el('td', { className: 'word', text: d.reason }),
      el('td', { text: count(d.attempts) }),
      el('td', {}, [time(d.recordedAt)]),
      el('td', {}, [time(d.deadAt)]),
      el('td', { className: 'word', text: d.lastOutcome ?? '—' }),
    ],
    actions,
  );
}
