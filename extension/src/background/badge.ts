import type messages from '../../public/_locales/en/messages.json';
import type { View } from '../state/view.ts';

/**
 * The badge on the toolbar icon: what the user has to do without opening the popup. It follows
 * the view, so every answer the background receives that reaches the view (the popup's refresh,
 * the status check, the flow, the integrator's API calls, the broker ending the session) sets or
 * clears it, and it stays in step with what the popup shows.
 */
export type Badge =
  | { readonly kind: 'none' }
  /** Licences the provider no longer accepts: the user reconnects them in the popup. */
  | { readonly kind: 'reconnect'; readonly count: number }
  /** The broker ended the session (its token is no longer valid): the user signs in again. */
  | { readonly kind: 'session_ended' };

/**
 * What the badge says for `view`. Cleared once the cause is gone: the licences reconnected (or
 * disconnected by the user), or a session again (signed in), or the "session ended" notice
 * dismissed, or a deliberate sign-out (its notice is `signed_out`, never `session_ended`).
 */
export function badgeFor(view: View): Badge {
  if (!view.signedIn)
    return view.notice?.kind === 'session_ended' ? { kind: 'session_ended' } : { kind: 'none' };
  const count = view.connections.filter((c) => c.status === 'disconnected').length;
  return count > 0 ? { kind: 'reconnect', count } : { kind: 'none' };
}

/** Every message key; en/messages.json is the reference (a unit test keeps fr and nl complete). */
export type MessageKey = keyof typeof messages;

/** `i18n.getMessage`: the extension's messages, in the browser's language. */
export type Messages = (key: MessageKey, ...substitutions: string[]) => string;

export interface BadgeLook {
  /** Empty: no badge. */
  readonly text: string;
  readonly color: string;
  /** The icon's tooltip, which screen readers announce as the button's name. */
  readonly title: string;
}

/** Dark enough for the browsers' white badge text (WCAG AA, 4.5:1 and more). */
const AMBER = '#A14A06';
const RED = '#B3261E';
const GREY = '#5F5D5B';

export function badgeLook(badge: Badge, message: Messages): BadgeLook {
  switch (badge.kind) {
    case 'none':
      return { text: '', color: GREY, title: message('extName') };
    case 'reconnect':
      return {
        text: '!',
        color: AMBER,
        title:
          badge.count === 1
            ? message('badgeReconnectOne')
            : message('badgeReconnectMany', String(badge.count)),
      };
    case 'session_ended':
      return { text: '!', color: RED, title: message('badgeSessionEnded') };
  }
}

/** What the badge needs of `browser.action`. */
export interface ActionApi {
  setBadgeText(details: { text: string }): Promise<void>;
  setBadgeBackgroundColor(details: { color: string }): Promise<void>;
  setTitle(details: { title: string }): Promise<void>;
}

/**
 * Shows the badge for each view it is given, in order, writing to the browser only when what it
 * shows changes (the first view after a start is always written: a new worker does not know what
 * the last one showed). A failure to write is logged, never thrown at the view's writer.
 */
export function createBadge(deps: {
  action: ActionApi;
  message: Messages;
  log: (event: string, fields?: Record<string, string | number | boolean>) => void;
}) {
  let shown: string | null = null;
  let queue: Promise<void> = Promise.resolve();

  async function apply(view: View): Promise<void> {
    const badge = badgeFor(view);
    const look = badgeLook(badge, deps.message);
    const key = JSON.stringify(look);
    if (key === shown) return;
    try {
      await deps.action.setBadgeBackgroundColor({ color: look.color });
      await deps.action.setBadgeText({ text: look.text });
      await deps.action.setTitle({ title: look.title });
      shown = key;
      deps.log('badge.shown', { kind: badge.kind });
    } catch (error) {
      shown = null;
      deps.log('badge.failed', { error: error instanceof Error ? error.name : 'unknown' });
    }
  }

  return {
    show(view: View): Promise<void> {
      queue = queue.then(() => apply(view));
      return queue;
    },
  };
}
