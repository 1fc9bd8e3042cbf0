import { displayHost } from '../../broker-url.ts';
import { summarizeUser, type Fact, type FactKey } from '../../present/user-record.ts';
import type { ConnectionView } from '../../state/view.ts';
import { h, icon, ICONS, type Child } from '../dom.ts';
import { t, type MessageKey } from '../i18n.ts';
import { disconnectedText, problemText } from '../problem-text.ts';
import { detailRow, display } from './details.ts';
import { fieldLabel } from './field-labels.ts';
import type { Screen } from './screen.ts';

const PRIMARY_FACTS: readonly FactKey[] = ['plan', 'seats', 'validUntil', 'language'];
const FACT_LABELS: Record<FactKey, MessageKey> = {
  plan: 'factPlan',
  seats: 'factSeats',
  validUntil: 'factValidUntil',
  language: 'factLanguage',
  licenseId: 'factLicenseId',
  accountId: 'factAccountId',
};

/** One license: its user, status, key facts, any problem, "All details" and its actions. */
export function card(s: Screen, c: ConnectionView, index: number): HTMLElement {
  const v = s.view;
  const summary = summarizeUser(c.user.record);
  const reconnecting = v.flow.status === 'running' && v.flow.reconnectId === c.id;
  const status = reconnecting ? 'connecting' : c.status;
  const titleId = `card-${index}-title`;
  const name = summary.name ?? summary.email ?? t('unknownUser');
  const licenseName = summary.licenseName ?? displayHost(c.apiOrigin);
  const loading =
    c.user.status === 'loading' && c.user.record === undefined && c.status === 'connected';
  const disconnecting = s.busy.has(`disconnect:${c.id}`);
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
      // One person may hold several licenses: the heading names the license too (for screen
      // readers; it is on the card already), so that no two cards' headings are alike.
      h(
        'h3',
        { id: titleId, class: 'card-name' },
        h('span', { 'data-testid': 'user-name' }, loading ? t('loadingDetails') : name),
        h('span', { class: 'visually-hidden' }, `, ${licenseName}`),
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
          { class: 'card-license' },
          h('span', { class: 'card-license-label' }, t('licenseLabel')),
          ' ',
          h('strong', { 'data-testid': 'license-name' }, licenseName),
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
          problemText(c.user.problem, v.brokerUrl, s.now),
          c.user.record !== undefined ? ` ${t('detailsOutdated')}` : '',
        )
      : null,
    loading ? null : detailsBlock(s, c, licenseName, secondary, summary.details),
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
              'aria-label': reconnecting ? null : t('reconnectLabel', licenseName),
              'aria-disabled': v.flow.status === 'running' ? 'true' : null,
              onclick: () => s.connect(c.id),
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
          'aria-label': t('disconnectLabel', licenseName),
          'aria-disabled': disconnecting ? 'true' : null,
          onclick: () => {
            if (!disconnecting) s.disconnect(c.id);
          },
        },
        disconnecting ? t('disconnecting') : t('disconnectButton'),
      ),
    ),
  );
}

function fact(f: Fact): Child {
  return h(
    'div',
    { class: 'fact' },
    h('dt', {}, t(FACT_LABELS[f.key])),
    h('dd', { 'data-fact': f.key }, display(f.value)),
  );
}

function detailsBlock(
  s: Screen,
  c: ConnectionView,
  licenseName: string,
  secondary: readonly Fact[],
  fields: ReturnType<typeof summarizeUser>['details'],
): HTMLElement {
  return h(
    'details',
    {
      class: 'more',
      open: s.openDetails.has(c.id),
      ontoggle: (event) => {
        if ((event.target as HTMLDetailsElement).open) s.openDetails.add(c.id);
        else s.openDetails.delete(c.id);
      },
    },
    h(
      'summary',
      {
        'data-testid': 'details-toggle',
        'data-focus': `details:${c.id}`,
        // "All details of <license>": the visible words first, then which license.
        'aria-label': t('moreDetailsLabel', licenseName),
      },
      t('moreDetails'),
    ),
    h(
      'dl',
      { class: 'tree', 'data-testid': 'user-details' },
      secondary.map((f) => detailRow(t(FACT_LABELS[f.key]), f.value, f.key)),
      fields.map((field) => detailRow(fieldLabel(field), field.value)),
      detailRow(t('factConnectedSince'), { kind: 'date', iso: c.connectedAt, withTime: true }),
      detailRow(t('factServer'), {
        kind: 'text',
        text: displayHost(c.apiOrigin),
        truncated: false,
      }),
    ),
  );
}
