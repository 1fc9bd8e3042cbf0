import type { Locale } from '@baton/shared';
import { displayHost, hostPermissionFor } from '../broker-url.ts';
import { LOCALE_NAMES, PICKER_LOCALES, isPickerLocale, localeFromLanguages } from '../locale.ts';
import type { MessageRequest, MessageResponse, MessageType } from '../messaging.ts';
import { summarizeUser, type Display, type Fact, type FactKey } from '../present/user-record.ts';
import { isBenign, type Problem, type ProblemCode } from '../problems.ts';
import type { ConnectionView, View } from '../state/view.ts';
import { h, icon, ICONS, type Child } from './dom.ts';
import { formatDate, formatNumber, formatTime, languageName, t, type MessageKey } from './i18n.ts';
import { disconnectedText, problemText } from './problem-text.ts';

/**
 * The popup: paints the view from storage.session at once, asks the background to refresh it,
 * re-renders whenever the background writes a new one, and sends every action through the
 * message map. The DOM is rebuilt on each change; focus, open disclosures and the live region
 * are preserved so that keyboard and screen-reader users do not lose their place.
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

export interface PopupElements {
  readonly status: HTMLElement;
  readonly main: HTMLElement;
  readonly settingsButton: HTMLButtonElement;
}

/** Flow outcomes older than this are history, not news. */
const OUTCOME_FRESH_MS = 30 * 60_000;

type Tone = 'info' | 'success' | 'warning' | 'error' | 'progress';
type StatusState =
  | 'idle'
  | 'connecting'
  | 'success'
  | 'notice'
  | 'cancelled'
  | 'denied'
  | 'unreachable'
  | 'permission'
  | 'error';

interface StatusAction {
  readonly label: string;
  readonly testId: string;
  readonly primary?: boolean;
  readonly run: () => void;
}

interface StatusModel {
  /** Changes only when the message does: the live region is rewritten (and announced) then. */
  readonly key: string;
  readonly state: StatusState;
  readonly tone: Tone;
  readonly text: string;
  readonly problem?: ProblemCode;
  readonly actions: readonly StatusAction[];
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

  elements.settingsButton.setAttribute('aria-label', t('openSettings'));
  elements.settingsButton.title = t('openSettings');
  elements.settingsButton.replaceChildren(icon(ICONS.settings));
  elements.settingsButton.addEventListener('click', () => deps.openOptions());

  const chosenLocale = (v: View): Locale =>
    ui.locale ?? v.locale ?? localeFromLanguages(deps.languages);

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

  async function grantThenRetry(retry: () => void): Promise<void> {
    const v = ui.view;
    if (v === null) return;
    let granted = false;
    try {
      granted = await deps.requestHostPermission(hostPermissionFor(v.brokerUrl));
    } catch (error) {
      console.error('[baton] permission request', error);
    }
    if (granted) retry();
  }

  const refresh = () => void act('refresh', 'view.refresh', null);
  const dismiss = () => {
    ui.localError = null;
    void act('dismiss', 'notice.dismiss', null);
  };

  // ---- status region ------------------------------------------------------------------------

  function problemStatus(
    v: View,
    problem: Problem,
    key: string,
    retry: () => void,
    retryTestId: string,
  ): StatusModel {
    const text = problemText(problem, v.brokerUrl, deps.now());
    const dismissAction: StatusAction = {
      label: t('dismissButton'),
      testId: 'dismiss-button',
      run: dismiss,
    };
    if (problem.code === 'permission_missing') {
      return {
        key,
        state: 'permission',
        tone: 'warning',
        text,
        problem: problem.code,
        actions: [
          {
            label: t('grantButton'),
            testId: 'grant-permission-button',
            primary: true,
            run: () => void grantThenRetry(retry),
          },
          dismissAction,
        ],
      };
    }
    const state: StatusState =
      problem.code === 'access_denied'
        ? 'denied'
        : problem.code === 'cancelled'
          ? 'cancelled'
          : problem.code === 'broker_unreachable' || problem.code === 'timeout'
            ? 'unreachable'
            : 'error';
    return {
      key,
      state,
      tone: isBenign(problem.code)
        ? 'info'
        : problem.code === 'access_denied'
          ? 'warning'
          : 'error',
      text,
      problem: problem.code,
      actions: [
        { label: t('retryButton'), testId: retryTestId, primary: true, run: retry },
        dismissAction,
      ],
    };
  }

  function statusOf(v: View): StatusModel | null {
    const now = deps.now();
    const flow = v.flow;
    if (flow.status === 'running') {
      return {
        key: `running:${flow.startedAt}`,
        state: 'connecting',
        tone: 'progress',
        text: `${t('connectingTitle')}. ${t('connectingBody')}`,
        actions: [],
      };
    }
    if (ui.localError !== null) {
      return problemStatus(v, ui.localError, 'local-error', refresh, 'retry-button');
    }
    if (flow.status === 'failed' && now - flow.at < OUTCOME_FRESH_MS) {
      return problemStatus(
        v,
        flow.problem,
        `flow-failed:${flow.at}`,
        () => connect(flow.reconnectId),
        'retry-button',
      );
    }
    if (flow.status === 'succeeded' && now - flow.at < OUTCOME_FRESH_MS) {
      return {
        key: `flow-ok:${flow.at}`,
        state: 'success',
        tone: 'success',
        text: t(flow.reconnected ? 'outcomeReconnected' : 'outcomeConnected'),
        actions: [{ label: t('dismissButton'), testId: 'dismiss-button', run: dismiss }],
      };
    }
    if (v.notice !== null) {
      const notice = v.notice;
      const dismissOnly = [{ label: t('dismissButton'), testId: 'dismiss-button', run: dismiss }];
      switch (notice.kind) {
        case 'action_failed':
          return problemStatus(
            v,
            notice.problem,
            `notice:${notice.problem.code}`,
            refresh,
            'retry-button',
          );
        case 'signed_out':
          return {
            key: 'notice:signed_out',
            state: 'notice',
            tone: 'info',
            text: t('noticeSignedOut'),
            actions: dismissOnly,
          };
        case 'signed_out_locally':
          return {
            key: 'notice:signed_out_locally',
            state: 'notice',
            tone: 'warning',
            text: t('noticeSignedOutLocally', displayHost(v.brokerUrl)),
            problem: notice.problem.code,
            actions: dismissOnly,
          };
        case 'session_ended':
          return {
            key: 'notice:session_ended',
            state: 'notice',
            tone: 'warning',
            text: t('noticeSessionEnded'),
            actions: dismissOnly,
          };
        case 'disconnected':
          return {
            key: `notice:disconnected:${notice.connectionId}`,
            state: 'notice',
            tone: 'info',
            text: t('noticeDisconnected'),
            actions: dismissOnly,
          };
      }
    }
    if (v.sync.status === 'failed' && v.sync.problem !== null) {
      return problemStatus(
        v,
        v.sync.problem,
        `sync:${v.sync.problem.code}`,
        refresh,
        'retry-button',
      );
    }
    return null;
  }

  const TONE_ICONS: Record<Tone, readonly string[] | null> = {
    info: ICONS.info,
    success: ICONS.check,
    warning: ICONS.alert,
    error: ICONS.alert,
    progress: null,
  };

  function renderStatus(v: View): void {
    const model = statusOf(v);
    const region = elements.status;
    region.dataset['state'] = model?.state ?? 'idle';
    if (model?.problem !== undefined) region.dataset['problem'] = model.problem;
    else delete region.dataset['problem'];
    const key = model === null ? '' : `${model.key}|${model.text}`;
    if (key === ui.statusKey) return;
    ui.statusKey = key;
    if (model === null) {
      region.replaceChildren();
      return;
    }
    const toneIcon = TONE_ICONS[model.tone];
    const [title, ...rest] =
      model.state === 'connecting' ? [t('connectingTitle'), t('connectingBody')] : [model.text];
    region.replaceChildren(
      h(
        'div',
        { class: `notice notice--${model.tone}` },
        model.tone === 'progress'
          ? h('span', { class: 'spinner', 'aria-hidden': 'true' })
          : toneIcon === null
            ? null
            : icon(toneIcon, 'icon notice-icon'),
        h(
          'div',
          { class: 'notice-body' },
          h(
            'p',
            { class: 'notice-text', 'data-testid': 'status-message' },
            model.state === 'connecting' ? h('strong', {}, title) : title,
          ),
          rest.map((line) => h('p', { class: 'notice-sub' }, line)),
          model.problem !== undefined &&
            !isBenign(model.problem) &&
            model.problem !== 'access_denied'
            ? h('p', { class: 'notice-code' }, t('problemCode', model.problem))
            : null,
          model.actions.length > 0
            ? h(
                'div',
                { class: 'notice-actions' },
                model.actions.map((action) =>
                  h(
                    'button',
                    {
                      type: 'button',
                      class:
                        action.primary === true
                          ? 'btn btn--small btn--primary'
                          : 'btn btn--small btn--quiet',
                      'data-testid': action.testId,
                      'data-focus': `status:${action.testId}`,
                      onclick: action.run,
                    },
                    action.label,
                  ),
                ),
              )
            : null,
        ),
      ),
    );
  }

  // ---- main area --------------------------------------------------------------------------

  function connectForm(v: View, labelKey: MessageKey): HTMLElement {
    const running = v.flow.status === 'running';
    const locale = chosenLocale(v);
    const select = h(
      'select',
      {
        id: 'locale-select',
        'data-testid': 'locale-select',
        'data-focus': 'locale-select',
        onchange: (event) => {
          const value = (event.target as HTMLSelectElement).value;
          if (isPickerLocale(value)) ui.locale = value;
        },
      },
      PICKER_LOCALES.map((code) =>
        h('option', { value: code, lang: code, selected: code === locale }, LOCALE_NAMES[code]),
      ),
    );
    select.value = locale;
    return h(
      'div',
      { class: 'connect' },
      h('label', { for: 'locale-select', class: 'field-label' }, t('localeLabel')),
      h(
        'div',
        { class: 'connect-row' },
        select,
        h(
          'button',
          {
            type: 'button',
            class: 'btn btn--primary',
            'data-testid': 'connect-button',
            'data-focus': 'connect-button',
            'aria-disabled': running ? 'true' : null,
            onclick: () => connect(null),
          },
          running
            ? [
                h('span', { class: 'spinner spinner--button', 'aria-hidden': 'true' }),
                t('connectingButton'),
              ]
            : t(labelKey),
        ),
      ),
    );
  }

  function signedOutScreen(v: View): Child {
    return h(
      'section',
      { class: 'intro', 'aria-labelledby': 'intro-title', 'data-testid': 'signed-out' },
      h('div', { class: 'intro-badge', 'aria-hidden': 'true' }, icon(ICONS.plug)),
      h('h2', { id: 'intro-title', class: 'intro-title', tabindex: '-1' }, t('signedOutTitle')),
      h('p', { class: 'intro-text' }, t('signedOutBody')),
      connectForm(v, 'connectButton'),
    );
  }

  function listScreen(v: View): Child {
    const loading = v.sync.status === 'loading' || ui.busy.has('refresh');
    return [
      h(
        'section',
        {
          class: 'licences',
          'aria-labelledby': 'licences-title',
          'aria-busy': loading ? 'true' : null,
        },
        h(
          'div',
          { class: 'list-head' },
          h(
            'h2',
            { id: 'licences-title', tabindex: '-1', 'data-focus': 'licences-title' },
            t('licencesTitle'),
            ' ',
            h('span', { class: 'count' }, formatNumber(v.connections.length)),
          ),
          h(
            'span',
            { class: 'updated', 'data-testid': 'updated-at' },
            loading
              ? t('refreshing')
              : v.sync.at === null
                ? ''
                : t('updatedAt', formatTime(v.sync.at)),
          ),
          h(
            'button',
            {
              type: 'button',
              class: `icon-btn${loading ? ' is-spinning' : ''}`,
              'aria-label': t('refreshButton'),
              title: t('refreshButton'),
              'data-testid': 'refresh-button',
              'data-focus': 'refresh-button',
              'aria-disabled': loading ? 'true' : null,
              onclick: () => {
                if (!loading) refresh();
              },
            },
            icon(ICONS.refresh),
          ),
        ),
        h(
          'ul',
          { class: 'cards', 'data-testid': 'connection-list', role: 'list' },
          v.connections.map((c, i) => h('li', {}, card(v, c, i))),
        ),
      ),
      h(
        'section',
        { class: 'add', 'aria-label': t('connectAnotherButton') },
        connectForm(v, 'connectAnotherButton'),
      ),
      h(
        'div',
        { class: 'footer' },
        h(
          'button',
          {
            type: 'button',
            class: 'btn btn--danger-quiet',
            'data-testid': 'sign-out-button',
            'data-focus': 'sign-out-button',
            'aria-disabled': ui.busy.has('signOut') ? 'true' : null,
            onclick: () => {
              if (!ui.busy.has('signOut')) void act('signOut', 'session.signOut', null);
            },
          },
          ui.busy.has('signOut') ? t('signingOut') : t('signOutButton'),
        ),
      ),
    ];
  }

  const PRIMARY_FACTS: readonly FactKey[] = ['plan', 'seats', 'validUntil', 'language'];
  const FACT_LABELS: Record<FactKey, MessageKey> = {
    plan: 'factPlan',
    seats: 'factSeats',
    validUntil: 'factValidUntil',
    language: 'factLanguage',
    licenceId: 'factLicenceId',
    accountId: 'factAccountId',
  };

  function card(v: View, c: ConnectionView, index: number): HTMLElement {
    const summary = summarizeUser(c.user.record);
    const reconnecting = v.flow.status === 'running' && v.flow.reconnectId === c.id;
    const status = reconnecting ? 'connecting' : c.status;
    const titleId = `card-${index}-title`;
    const name = summary.name ?? summary.email ?? t('unknownUser');
    const licenceName = summary.licenceName ?? displayHost(c.apiOrigin);
    const loading =
      c.user.status === 'loading' && c.user.record === undefined && c.status === 'connected';
    const disconnecting = ui.busy.has(`disconnect:${c.id}`);
    const primary = summary.facts.filter((f) => PRIMARY_FACTS.includes(f.key));
    const secondary = summary.facts.filter((f) => !PRIMARY_FACTS.includes(f.key));

    const pillKey: MessageKey =
      status === 'connecting'
        ? 'statusReconnecting'
        : status === 'connected'
          ? 'statusConnected'
          : 'statusDisconnected';

    return h(
      'article',
      {
        class: `card card--${status}`,
        'aria-labelledby': titleId,
        'aria-busy': loading || disconnecting ? 'true' : null,
        'data-testid': 'connection-card',
        'data-connection-id': c.id,
        'data-status': status,
      },
      h(
        'header',
        { class: 'card-head' },
        h(
          'h3',
          { id: titleId, class: 'card-name', 'data-testid': 'user-name' },
          loading ? t('loadingDetails') : name,
        ),
        h(
          'span',
          { class: `pill pill--${status}`, 'data-testid': 'connection-status' },
          status === 'connecting'
            ? h('span', { class: 'spinner spinner--pill', 'aria-hidden': 'true' })
            : h('span', { class: 'dot', 'aria-hidden': 'true' }),
          t(pillKey),
        ),
        summary.email !== null && summary.email !== name
          ? h('p', { class: 'card-email', 'data-testid': 'user-email' }, summary.email)
          : null,
      ),
      loading
        ? h(
            'div',
            { class: 'skeleton', 'aria-hidden': 'true' },
            h('span', {}),
            h('span', {}),
            h('span', {}),
          )
        : h(
            'p',
            { class: 'card-licence' },
            h('span', { class: 'card-licence-label' }, t('licenceLabel')),
            ' ',
            h('strong', { 'data-testid': 'license-name' }, licenceName),
          ),
      primary.length > 0 ? h('dl', { class: 'facts' }, primary.map(fact)) : null,
      c.status === 'disconnected'
        ? h(
            'p',
            { class: 'card-warning', 'data-testid': 'disconnected-reason' },
            icon(ICONS.alert, 'icon inline-icon'),
            disconnectedText(c.disconnectedReason),
          )
        : null,
      c.status === 'connected' && c.user.status === 'failed'
        ? h(
            'p',
            {
              class: 'card-problem',
              'data-testid': 'user-problem',
              'data-problem': c.user.problem.code,
            },
            problemText(c.user.problem, v.brokerUrl, deps.now()),
            c.user.record !== undefined ? ` ${t('detailsOutdated')}` : '',
          )
        : null,
      loading ? null : detailsBlock(c, secondary, summary.details),
      h(
        'div',
        { class: 'card-actions' },
        c.status === 'disconnected'
          ? h(
              'button',
              {
                type: 'button',
                class: 'btn btn--small btn--primary',
                'data-testid': 'reconnect-button',
                'data-focus': `reconnect:${c.id}`,
                'aria-label': reconnecting ? null : t('reconnectLabel', licenceName),
                'aria-disabled': v.flow.status === 'running' ? 'true' : null,
                onclick: () => connect(c.id),
              },
              reconnecting ? t('statusReconnecting') : t('reconnectButton'),
            )
          : null,
        h(
          'button',
          {
            type: 'button',
            class: 'btn btn--small btn--quiet',
            'data-testid': 'disconnect-button',
            'data-focus': `disconnect:${c.id}`,
            'aria-label': t('disconnectLabel', licenceName),
            'aria-disabled': disconnecting ? 'true' : null,
            onclick: () => {
              if (!disconnecting) void disconnect(c.id);
            },
          },
          disconnecting ? t('disconnecting') : t('disconnectButton'),
        ),
      ),
    );
  }

  async function disconnect(id: string): Promise<void> {
    await act(`disconnect:${id}`, 'connection.disconnect', { connectionId: id });
    // The card is gone: put focus somewhere that still exists.
    if (document.activeElement === document.body || document.activeElement === null) {
      document.getElementById('licences-title')?.focus();
    }
  }

  function fact(f: Fact): Child {
    return h(
      'div',
      { class: 'fact' },
      h('dt', {}, t(FACT_LABELS[f.key])),
      h('dd', { 'data-fact': f.key }, display(f.value)),
    );
  }

  const isGroup = (d: Display) =>
    d.kind === 'object' ||
    (d.kind === 'list' && d.items.some((i) => i.kind === 'object' || i.kind === 'list'));

  function detailRow(label: string, value: Display): Child {
    const group = isGroup(value) ? 'is-group' : null;
    return [h('dt', { class: group }, label), h('dd', { class: group }, display(value))];
  }

  /** Known keys get the UI's own word; unknown ones keep their humanised name. */
  const fieldLabel = (field: { key: string; label: string }) =>
    field.key === 'license' || field.key === 'licence' ? t('licenceLabel') : field.label;

  function detailsBlock(
    c: ConnectionView,
    secondary: readonly Fact[],
    fields: ReturnType<typeof summarizeUser>['details'],
  ): HTMLElement {
    const details = h(
      'details',
      {
        class: 'more',
        open: ui.openDetails.has(c.id),
        ontoggle: (event) => {
          if ((event.target as HTMLDetailsElement).open) ui.openDetails.add(c.id);
          else ui.openDetails.delete(c.id);
        },
      },
      h(
        'summary',
        { 'data-testid': 'details-toggle', 'data-focus': `details:${c.id}` },
        t('moreDetails'),
      ),
      h(
        'dl',
        { class: 'tree', 'data-testid': 'user-details' },
        secondary.map((f) => detailRow(t(FACT_LABELS[f.key]), f.value)),
        fields.map((field) => detailRow(fieldLabel(field), field.value)),
        detailRow(t('factConnectedSince'), { kind: 'date', iso: c.connectedAt, withTime: true }),
        detailRow(t('factServer'), {
          kind: 'text',
          text: displayHost(c.apiOrigin),
          truncated: false,
        }),
      ),
    );
    return details;
  }

  function display(d: Display): Child {
    switch (d.kind) {
      case 'text':
        return d.text;
      case 'date':
        return h('time', { datetime: d.iso }, formatDate(d.iso, d.withTime));
      case 'number':
        return formatNumber(d.value);
      case 'boolean':
        return t(d.value ? 'valueYes' : 'valueNo');
      case 'language':
        return languageName(d.code);
      case 'empty':
        return h('span', { class: 'muted', 'aria-label': t('valueEmpty') }, '—');
      case 'elided':
        return h('span', { class: 'muted' }, '…');
      case 'list': {
        const scalar = d.items.every((item) => item.kind !== 'list' && item.kind !== 'object');
        const more = d.more > 0 ? t('valueMore', formatNumber(d.more)) : null;
        if (scalar) {
          return h(
            'ul',
            { class: 'inline-list' },
            d.items.map((item) => h('li', {}, display(item))),
            more === null ? null : h('li', { class: 'muted' }, more),
          );
        }
        return h(
          'ol',
          { class: 'nested-list' },
          d.items.map((item) => h('li', {}, display(item))),
          more === null ? null : h('li', { class: 'muted' }, more),
        );
      }
      case 'object':
        return h(
          'dl',
          { class: 'tree tree--nested' },
          d.fields.map((field) => detailRow(field.label, field.value)),
          d.more > 0
            ? [
                h('dt', { class: 'muted' }, '…'),
                h('dd', { class: 'muted' }, t('valueMore', formatNumber(d.more))),
              ]
            : null,
        );
    }
  }

  // ---- rendering --------------------------------------------------------------------------

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
    const focused = document.activeElement;
    const focusKey = focused?.getAttribute('data-focus') ?? null;
    renderStatus(v);
    const hasList = v.signedIn && v.connections.length > 0;
    const content = hasList ? listScreen(v) : signedOutScreen(v);
    elements.main.replaceChildren(
      ...(Array.isArray(content) ? content : [content]).filter((c): c is Node => c instanceof Node),
    );
    if (focusKey !== null && focused !== null && !focused.isConnected) {
      // The focused element was replaced: focus its successor, or the heading of the screen.
      const target =
        document.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focusKey)}"]`) ??
        document.getElementById('licences-title') ??
        document.getElementById('intro-title');
      target?.focus();
    }
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
