// @ts-check
/* global document, sessionStorage, HTMLElement, HTMLButtonElement, HTMLFormElement, HTMLInputElement, HTMLSelectElement */
/**
 * The admin console: a page of the admin listener over its API (/api/v1). Plain JavaScript
 * modules, served as written, so that the broker run from its source and the built one serve the
 * same files (the source runs on Node's type stripping, which a browser lacks); tsc checks them
 * through JSDoc against the operators' contract (server/src/admin/types.ts), with the folder's own
 * tsconfig.json.
 *
 * This module signs in and out and wires the page. The token is kept in memory and in this tab's
 * sessionStorage (so a reload keeps it; closing the tab forgets it), never in localStorage, never
 * in a URL: it travels in the Authorization header only (console/api.js).
 * @typedef {import('../../../../admin/types.ts').Actor} Actor
 */
import { ApiError, createApi } from './console/api.js';
import { wireConfirm } from './console/confirm.js';
import { byId, say } from './console/dom.js';
import { createPanels, readSearch } from './console/panels.js';

const TOKEN_KEY = 'baton.admin.token';

/** @type {{ token: string | null, actor: Actor | null }} */
const state = { token: null, actor: null };

const panels = createPanels({
  api: createApi(() => state.token),
  operator: () => state.actor?.role === 'operator',
  showError,
});

/** @param {number | null} seconds */
const later = (seconds) =>
  seconds === null ? 'later' : `in ${seconds} second${seconds === 1 ? '' : 's'}`;

/** What an API error means to the operator; a refused token sends them back to the sign-in form. */
function showError(/** @type {unknown} */ error) {
  if (!(error instanceof ApiError)) {
    say(`Something went wrong in the page: ${String(error)}`, 'error');
    return;
  }
  switch (error.status) {
    case 401:
      signOut(`Your token is no longer accepted: ${error.message} Sign in again.`, 'error');
      return;
    case 403:
      say(`Your role may not do this: ${error.message}`, 'error');
      return;
    case 429:
      say(`Too many failed attempts. Try again ${later(error.retryAfter)}.`, 'error');
      return;
    case 503:
      say(`The broker's store is unavailable. Try again ${later(error.retryAfter)}.`, 'error');
      return;
    case 0:
      say(error.message, 'error');
      return;
    default:
      say(`${error.message} (${error.code}, HTTP ${error.status})`, 'error');
  }
}

/** Checks the token with whoami; kept only once it is accepted. */
async function signIn(/** @type {string} */ token) {
  state.token = token;
  /** @type {Actor} */
  let actor;
  try {
    actor = await createApi(() => token)('GET', '/whoami');
  } catch (error) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    if (error instanceof ApiError && error.status === 401)
      say('That token was not accepted. Check it and try again.', 'error');
    else showError(error);
    return;
  }
  state.actor = actor;
  sessionStorage.setItem(TOKEN_KEY, token);
  byId('token', HTMLInputElement).value = '';
  byId('identity-name', HTMLElement).textContent = actor.name;
  byId('identity-role', HTMLElement).textContent = actor.role;
  // A viewer is drawn no action; the stylesheet hides the static ones (.operator-only).
  document.body.classList.toggle('viewer', actor.role !== 'operator');
  byId('identity', HTMLElement).hidden = false;
  byId('sign-in', HTMLElement).hidden = true;
  byId('signed-in', HTMLElement).hidden = false;
  say(`Signed in as ${actor.name} (${actor.role}).`, 'done');
  byId('overview-title', HTMLElement).focus();
  await panels.loadAll();
}

/** Forgets the token and every answer shown, and goes back to the form. */
function signOut(/** @type {string} */ text, /** @type {'info' | 'error'} */ kind = 'info') {
  state.token = null;
  state.actor = null;
  sessionStorage.removeItem(TOKEN_KEY);
  panels.clear();
  byId('identity-name', HTMLElement).textContent = '';
  byId('identity-role', HTMLElement).textContent = '';
  byId('identity', HTMLElement).hidden = true;
  byId('signed-in', HTMLElement).hidden = true;
  byId('sign-in', HTMLElement).hidden = false;
  say(text, kind);
  byId('token', HTMLInputElement).focus();
}

/** @param {string} id @param {() => unknown} run */
const onClick = (id, run) =>
  byId(id, HTMLButtonElement).addEventListener('click', () => void run());

function start() {
  // Headings take focus (not tab order) where the page moves it: after signing in, after an action.
  for (const id of ['overview-title', 'connections-title', 'dead-letters-title', 'reencrypt-title'])
    byId(id, HTMLElement).tabIndex = -1;
  wireConfirm();
  byId('sign-in-form', HTMLFormElement).addEventListener('submit', (event) => {
    event.preventDefault();
    const token = byId('token', HTMLInputElement).value.trim();
    if (token === '') say('Enter your admin token.', 'error');
    else void signIn(token);
  });
  byId('search-form', HTMLFormElement).addEventListener('submit', (event) => {
    event.preventDefault();
    const by = byId('search-by', HTMLSelectElement).value;
    const search = readSearch(by, byId('search-value', HTMLInputElement).value);
    if (typeof search === 'string') say(search, 'error');
    else void panels.search(search);
  });
  onClick('sign-out', () => signOut('Signed out.'));
  onClick('overview-refresh', panels.loadOverview);
  onClick('dead-letters-refresh', panels.loadDeadLetters);
  onClick('reencrypt-refresh', panels.loadReencrypt);
  onClick('reencrypt-start', panels.startReencrypt);
  onClick('census-start', panels.startCensus);
  onClick('end-licence', panels.endLicenceSessions);

  const kept = sessionStorage.getItem(TOKEN_KEY);
  if (kept === null) byId('token', HTMLInputElement).focus();
  else void signIn(kept);
}

start();
