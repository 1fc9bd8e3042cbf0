import type { Locale } from '@baton/shared';
import { hostPermissionFor } from '../../broker-url.ts';
import { localeFromLanguages } from '../../locale.ts';
import type { MessageRequest, MessageResponse, MessageType } from '../../messaging.ts';
import type { Problem } from '../../problems.ts';
import type { View } from '../../state/view.ts';
import { h, icon, ICONS } from '../dom.ts';
import { t } from '../i18n.ts';
import { focusListIfLost, keepingFocus, watchInputModality } from './focus.ts';
import type { Screen } from './screen.ts';
import { screenOf } from './screens.ts';
import { statusOf, type Retry, type StatusAction } from './status.ts';
import { renderStatus } from './status-view.ts';

/**
 * The popup: paints the view from storage.session at once (after a browser restart, when that is
 * empty, the licenses kept in storage.local: state/last-view.ts), asks the background to refresh it,
 * re-renders whenever the background writes a new one, and sends every action through the
 * message map. One render loop over its parts: the status line (status.ts decides which message
 * wins, status-view.ts draws it), the screens and cards (screens.ts, cards.ts, details.ts), and
 * focus kept across re-renders (focus.ts).
 */
export interface PopupDeps {
  readonly send: <K extends MessageType>(
    type: K,
    data: MessageRequest<K>,
  ) => Promise<MessageResponse<K>>;
  readonly readView: () => Promise<View | null>;
  readonly watchView: (listener: (view: View | null) => void) => void;
  /** `permissions.request`, called straight from a click (Firefox needs the user gesture). */
  readonly requestHostPermission: (pattern: string) => Promise<boolean>;
  readonly openOptions: () => void;
  /** The browser's preferred languages, for the default language of the sign-in pages. */
  readonly languages: readonly string[];
  readonly now: () => number;
  /** Shown when neither storage nor the background has a view (the worker failed to answer). */
  readonly fallbackView: View;
}

/** The User Timing mark of the first license card on screen. */
export const FIRST_CARD_MARK = 'baton:first-card';

export interface PopupElements {
  readonly status: HTMLElement;
  readonly main: HTMLElement;
  readonly settingsButton: HTMLButtonElement;
}

export function mountPopup(elements: PopupElements, deps: PopupDeps): void {
  const ui = {
    view: null as View | null,
    locale: null as Locale | null,
    busy: new Set<string>(),
    openDetails: new Set<string>(),
    localError: null as Problem | null,
    statusKey: '',
  };

  watchInputModality(document);
  elements.settingsButton.setAttribute('aria-label', t('openSettings'));
  elements.settingsButton.title = t('openSettings');
  elements.settingsButton.replaceChildren(icon(ICONS.settings));
  elements.settingsButton.addEventListener('click', () => deps.openOptions());

  const chosenLocale = (v: View): Locale =>
    ui.locale ?? v.locale ?? localeFromLanguages(deps.languages);

  /** Send one action to the background, marked busy under `busyKey` meanwhile. */
  async function act<K extends MessageType>(
    busyKey: string,
    type: K,
    data: MessageRequest<K>,
  ): Promise<MessageResponse<K> | undefined> {
    ui.busy.add(busyKey);
    ui.localError = null;
    render();
    try {
      return await deps.send(type, data);
    } catch (error) {
      console.error('[baton] popup', type, error);
      ui.localError = { code: 'unexpected' };
      return undefined;
    } finally {
      ui.busy.delete(busyKey);
      render();
    }
  }

  function connect(reconnectId: string | null): void {
    const v = ui.view;
    if (v === null || v.flow.status === 'running') return;
    void act('connect', 'flow.start', { locale: chosenLocale(v), reconnectId });
  }
  const refresh = () => void act('refresh', 'view.refresh', null);
  const retry = (what: Retry) => (what.kind === 'refresh' ? refresh() : connect(what.reconnectId));

  async function grantThenRetry(what: Retry): Promise<void> {
    const v = ui.view;
    if (v === null) return;
    let granted = false;
    try {
      granted = await deps.requestHostPermission(hostPermissionFor(v.brokerUrl));
    } catch (error) {
      console.error('[baton] permission request', error);
    }
    if (granted) retry(what);
  }

  function run(action: StatusAction): void {
    switch (action.kind) {
      case 'retry':
        retry(action.retry);
        return;
      case 'grant':
        void grantThenRetry(action.retry);
        return;
      case 'dismiss':
        ui.localError = null;
        void act('dismiss', 'notice.dismiss', null);
        return;
    }
  }

  const screen = (v: View): Screen => ({
    view: v,
    locale: chosenLocale(v),
    busy: ui.busy,
    openDetails: ui.openDetails,
    now: deps.now(),
    chooseLocale: (locale) => (ui.locale = locale),
    connect,
    refresh,
    signOut: () => void act('signOut', 'session.signOut', null).then(focusListIfLost),
    disconnect: (id) =>
      void act(`disconnect:${id}`, 'connection.disconnect', { connectionId: id }).then(
        focusListIfLost,
      ),
  });

  /**
   * A User Timing mark when the first license card is in the DOM, measured from the popup's
   * navigation start: test/bench/popup-timing.ts reads it, and so can DevTools.
   */
  let cardMarked = false;
  function markFirstCard(): void {
    if (cardMarked || elements.main.querySelector('[data-testid="connection-card"]') === null)
      return;
    cardMarked = true;
    performance.mark(FIRST_CARD_MARK);
  }

  function render(): void {
    const v = ui.view;
    if (v === null) {
      elements.main.setAttribute('aria-busy', 'true');
      elements.main.replaceChildren(
        h(
          'div',
          { class: 'skeleton skeleton--page', 'aria-hidden': 'true' },
          h('span', {}),
          h('span', {}),
          h('span', {}),
        ),
      );
      return;
    }
    elements.main.removeAttribute('aria-busy');
    keepingFocus(() => {
      const model = statusOf(v, ui.localError, deps.now());
      ui.statusKey = renderStatus(elements.status, model, ui.statusKey, run);
      const content = screenOf(screen(v));
      elements.main.replaceChildren(
        ...(Array.isArray(content) ? content : [content]).filter(
          (c): c is Node => c instanceof Node,
        ),
      );
    });
    markFirstCard();
  }

  deps.watchView((view) => {
    if (view === null) return;
    ui.view = view;
    render();
  });
  void deps.readView().then((view) => {
    if (view !== null && ui.view === null) {
      ui.view = view;
      render();
    }
  });
  render();
  // Ask the background for a fresh list; its progress arrives through watchView. The answer is
  // only used when storage.session had no view yet (the watch may already have a newer one).
  void deps
    .send('view.refresh', null)
    .then((view) => {
      if (ui.view !== null) return;
      ui.view = view;
      render();
    })
    .catch((error: unknown) => {
      console.error('[baton] popup refresh', error);
      ui.localError = { code: 'unexpected' };
      ui.view ??= deps.fallbackView;
      render();
    });
}
