// @ts-check
/* global URLSearchParams, HTMLElement, HTMLButtonElement, HTMLTableElement */
/* global setTimeout, clearTimeout */
import { segment } from './api.js';
import { act, confirmed } from './confirm.js';
import { actionButton, byId, plural, say } from './dom.js';
import {
  censusStatus,
  connectionRow,
  letterRow,
  overviewGroups,
  reencryptFacts,
  reencryptVerb,
} from './views.js';

/**
 * The signed-in page's four panels (overview, connections, dead letters, re-encryption): each loads
 * from the API, draws, and, for an operator, offers its actions, each confirmed first.
 * @typedef {import('./api.js').Api} Api
 * @typedef {import('../../../../../admin/types.ts').ConnectionView} ConnectionView
 * @typedef {import('../../../../../admin/types.ts').DeadLetterView} DeadLetterView
 * @typedef {import('../../../../../admin/types.ts').ActionResult} ActionResult
 * @typedef {{ by: 'licence' | 'connection' | 'session', value: string }} Search
 * @typedef {{ api: Api, operator: () => boolean, showError: (error: unknown) => void }} Context
 */

const LIMIT = '100';
/** How often a running census is asked how it goes (it takes about a minute a million sessions). */
const CENSUS_POLL_MS = 2000;
const NAMES = { licence: 'licence', connection: 'connection id', session: 'session' };

/**
 * What the search form asks for, or why it is not a search.
 * @param {string} by @param {string} raw
 * @returns {Search | string}
 */
export function readSearch(by, raw) {
  const value = raw.trim();
  if (by !== 'licence' && by !== 'connection' && by !== 'session')
    return 'Choose what to search by.';
  if (value === '') return 'Enter a value to search for.';
  if (by === 'licence' && !/^https?:\/\/\S+$/.test(value))
    return 'A licence is searched by its api_url, such as https://api.example.com/licenses/42.';
  return { by, value };
}

/** @param {Context} ctx */
export function createPanels(ctx) {
  const { api, operator, showError } = ctx;
  /** @type {Search | null} */
  let search = null;
  const body = (/** @type {string} */ id) => byId(id, HTMLTableElement).tBodies[0];
  /** @param {() => Promise<unknown>} load */
  const guarded = (load) => () => load().catch(showError);

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let censusPoll;

  /**
   * The census's line (a live region: its state is read out as it changes) and its button; while
   * it runs, asked again until it ends, then the overview redrawn with its figures.
   * @param {import('../../../../../admin/types.ts').Overview['census']['state']} state
   */
  function drawCensus(state) {
    byId('census-status', HTMLElement).textContent = censusStatus(state);
    const button = byId('census-start', HTMLButtonElement);
    button.disabled = state === 'running';
    button.textContent = state === 'running' ? 'Counting…' : 'Count now';
    clearTimeout(censusPoll);
    censusPoll = undefined;
    if (state === 'running') censusPoll = setTimeout(() => void pollCensus(), CENSUS_POLL_MS);
  }

  const pollCensus = guarded(async () => {
    /** @type {import('../../../../../admin/types.ts').CensusJob} */
    const job = await api('GET', '/jobs/census');
    if (job.state === 'running') drawCensus(job.state);
    else await loadOverview();
  });

  const loadOverview = guarded(async () => {
    /** @type {import('../../../../../admin/types.ts').Overview} */
    const overview = await api('GET', '/overview');
    byId('overview', HTMLElement).replaceChildren(...overviewGroups(overview, Date.now()));
    drawCensus(overview.census.state);
  });

  /** Starts a census (read-only: no confirmation); the overview shows its figures once done. */
  async function startCensus() {
    try {
      /** @type {import('../../../../../admin/types.ts').CensusJob} */
      const job = await api('POST', '/jobs/census');
      drawCensus(job.state);
      say('Count started: the overview shows its figures once done.', 'done');
    } catch (error) {
      showError(error);
    }
  }

  const loadConnections = guarded(async () => {
    if (search === null) return;
    const query = new URLSearchParams({ [search.by]: search.value, limit: LIMIT });
    /** @type {{ connections: ConnectionView[] }} */
    const { connections } = await api('GET', `/connections?${query}`);
    body('connections')?.replaceChildren(
      ...connections.map((c) => connectionRow(c, operator() ? connectionActions(c) : null)),
    );
    byId('connections-summary', HTMLElement).textContent =
      `${plural(connections.length, 'connection', 'connections')} for ${NAMES[search.by]} ${search.value}.`;
    byId('licence-actions', HTMLElement).hidden =
      !operator() || search.by !== 'licence' || connections.length === 0;
  });

  const afterConnections = () => Promise.all([loadConnections(), loadOverview()]).then(() => {});

  /** Disconnect (while connected) and End session, for one connection's row. */
  function connectionActions(/** @type {ConnectionView} */ c) {
    const fallback = byId('connections-title', HTMLElement);
    const disconnect = actionButton({
      text: 'Disconnect',
      label: `Disconnect ${c.id}`,
      action: 'disconnect',
      danger: true,
      run: () =>
        act(
          {
            title: 'Disconnect this connection?',
            text: `Connection ${c.id} to ${c.licence} will be marked disconnected; its user must connect the licence again.`,
            confirm: 'Disconnect',
            send: () => api('POST', `/connections/${segment(c.id)}/disconnect`),
            done: (n) => `Disconnected ${plural(n, 'connection', 'connections')}.`,
            after: afterConnections,
            fallback,
          },
          showError,
        ),
    });
    const end = actionButton({
      text: 'End session',
      label: `End session ${c.sessionRef}`,
      action: 'end-session',
      run: () =>
        act(
          {
            title: 'End this session?',
            text: `Session ${c.sessionRef} ends, with every connection it holds; its user must connect again.`,
            confirm: 'End session',
            send: () => api('POST', `/sessions/${segment(c.sessionRef)}/end`),
            done: (n) => `Ended ${plural(n, 'session', 'sessions')}.`,
            after: afterConnections,
            fallback,
          },
          showError,
        ),
    });
    return c.status === 'connected' ? [disconnect, end] : [end];
  }

  function endLicenceSessions() {
    if (search === null || search.by !== 'licence') return;
    const licence = search.value;
    void act(
      {
        title: 'End every session of this licence?',
        text: `Every session holding a connection to ${licence} ends; each user must connect again.`,
        confirm: 'End every session',
        send: () => api('POST', '/licences/end-sessions', { licence }),
        done: (n) => `Ended ${plural(n, 'session', 'sessions')}.`,
        after: afterConnections,
        fallback: byId('connections-title', HTMLElement),
      },
      showError,
    );
  }

  const loadDeadLetters = guarded(async () => {
    /** @type {{ deadLetters: DeadLetterView[] }} */
    const { deadLetters } = await api(
      'GET',
      `/dead-letters?${new URLSearchParams({ limit: LIMIT })}`,
    );
    body('dead-letters')?.replaceChildren(
      ...deadLetters.map((d) => letterRow(d, operator() ? letterActions(d) : null)),
    );
    byId('dead-letters-summary', HTMLElement).textContent =
      deadLetters.length === 0
        ? 'No dead letters.'
        : `${plural(deadLetters.length, 'dead letter', 'dead letters')}.`;
  });

  /** Redeliver and Discard, for one dead letter's row. */
  function letterActions(/** @type {DeadLetterView} */ d) {
    const fallback = byId('dead-letters-title', HTMLElement);
    const after = () => Promise.all([loadDeadLetters(), loadOverview()]).then(() => {});
    const path = `/dead-letters/${segment(d.id)}`;
    const redeliver = actionButton({
      text: 'Redeliver',
      label: `Redeliver ${d.id}`,
      action: 'redeliver',
      run: () =>
        act(
          {
            title: 'Redeliver this event?',
            text: `Event ${d.id} (${d.type}) goes back to its outbox, to be delivered again.`,
            confirm: 'Redeliver',
            send: () => api('POST', `${path}/redeliver`),
            done: (n) => `Redelivered ${plural(n, 'event', 'events')}.`,
            after,
            fallback,
          },
          showError,
        ),
    });
    const discard = actionButton({
      text: 'Discard',
      label: `Discard ${d.id}`,
      action: 'discard',
      danger: true,
      run: () =>
        act(
          {
            title: 'Discard this event?',
            text: `Event ${d.id} (${d.type}) is deleted and will never be delivered.`,
            confirm: 'Discard',
            send: () => api('DELETE', path),
            done: (n) => `Discarded ${plural(n, 'event', 'events')}.`,
            after,
            fallback,
          },
          showError,
        ),
    });
    return [redeliver, discard];
  }

  /** @param {import('../../../../../admin/types.ts').ReencryptJob} job */
  function drawJob(job) {
    byId('reencrypt', HTMLElement).replaceChildren(...reencryptFacts(job));
    const verb = reencryptVerb(job.state);
    const button = byId('reencrypt-start', HTMLButtonElement);
    button.disabled = verb === null;
    button.textContent = verb ?? 'Running…';
  }

  const loadReencrypt = guarded(async () => drawJob(await api('GET', '/jobs/reencrypt')));

  async function startReencrypt() {
    const verb = byId('reencrypt-start', HTMLButtonElement).textContent ?? 'Start';
    const ok = await confirmed({
      title: `${verb} the re-encryption?`,
      text: 'Every connection record is sealed again under the active key, a batch at a time.',
      confirm: verb,
      fallback: byId('reencrypt-title', HTMLElement),
    });
    if (!ok) {
      say('Cancelled: nothing was changed.');
      return;
    }
    try {
      drawJob(await api('POST', '/jobs/reencrypt'));
      say(verb === 'Resume' ? 'Re-encryption resumed.' : 'Re-encryption started.', 'done');
    } catch (error) {
      showError(error);
    }
  }

  return {
    /** Every panel but the search's, loaded at once (after signing in). */
    loadAll: () => Promise.all([loadOverview(), loadDeadLetters(), loadReencrypt()]).then(() => {}),
    loadOverview,
    loadDeadLetters,
    loadReencrypt,
    startReencrypt,
    startCensus,
    endLicenceSessions,
    /** Runs a search; it stays the table's until the next (actions refresh it). */
    search(/** @type {Search} */ next) {
      search = next;
      return loadConnections();
    },
    /** Forgets every answer shown (on signing out). */
    clear() {
      search = null;
      clearTimeout(censusPoll);
      censusPoll = undefined;
      byId('overview', HTMLElement).replaceChildren();
      byId('census-status', HTMLElement).textContent = '';
      byId('reencrypt', HTMLElement).replaceChildren();
      body('connections')?.replaceChildren();
      body('dead-letters')?.replaceChildren();
      byId('connections-summary', HTMLElement).textContent = '';
      byId('dead-letters-summary', HTMLElement).textContent = '';
      byId('licence-actions', HTMLElement).hidden = true;
    },
  };
}
