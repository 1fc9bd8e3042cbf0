import { LOCALE_NAMES, PICKER_LOCALES, isPickerLocale } from '../../locale.ts';
import { h, icon, ICONS, type Child } from '../dom.ts';
import { formatNumber, formatTime, t, type MessageKey } from '../i18n.ts';
import { card } from './cards.ts';
import type { Screen } from './screen.ts';

/** The screen for a view: the licenses when there are any, else the sign-in invitation. */
export function screenOf(s: Screen): Child {
  return s.view.signedIn && s.view.connections.length > 0 ? listScreen(s) : signedOutScreen(s);
}

function signedOutScreen(s: Screen): Child {
  return h(
    'section',
    { class: 'intro', 'aria-labelledby': 'intro-title', 'data-testid': 'signed-out' },
    h('div', { class: 'intro-badge', 'aria-hidden': 'true' }, icon(ICONS.plug)),
    h(
      'h2',
      { id: 'intro-title', class: 'intro-title', tabindex: '-1', 'data-focus': 'intro-title' },
      t('signedOutTitle'),
    ),
    h('p', { class: 'intro-text' }, t('signedOutBody')),
    connectForm(s, 'connectButton'),
  );
}

function listScreen(s: Screen): Child {
  const v = s.view;
  const loading = v.sync.status === 'loading' || s.busy.has('refresh');
  const signingOut = s.busy.has('signOut');
  return [
    h(
      'section',
      {
        class: 'licenses',
        'aria-labelledby': 'licenses-title',
        'aria-busy': loading ? 'true' : null,
      },
      h(
        'div',
        { class: 'list-head' },
        h(
          'h2',
          { id: 'licenses-title', tabindex: '-1', 'data-focus': 'licenses-title' },
          t('licensesTitle'),
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
              if (!loading) s.refresh();
            },
          },
          icon(ICONS.refresh),
        ),
      ),
      h(
        'ul',
        { class: 'cards', 'data-testid': 'connection-list', role: 'list' },
        v.connections.map((c, i) => h('li', {}, card(s, c, i))),
      ),
    ),
    h(
      'section',
      { class: 'add', 'aria-label': t('connectAnotherButton') },
      connectForm(s, 'connectAnotherButton'),
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
          'aria-disabled': signingOut ? 'true' : null,
          onclick: () => {
            if (!signingOut) s.signOut();
          },
        },
        signingOut ? t('signingOut') : t('signOutButton'),
      ),
    ),
  ];
}

/** The language picker of the sign-in pages and the button that starts the flow. */
function connectForm(s: Screen, labelKey: MessageKey): HTMLElement {
  const running = s.view.flow.status === 'running';
  const select = h(
    'select',
    {
      id: 'locale-select',
      'data-testid': 'locale-select',
      'data-focus': 'locale-select',
      onchange: (event) => {
        const value = (event.target as HTMLSelectElement).value;
        if (isPickerLocale(value)) s.chooseLocale(value);
      },
    },
    PICKER_LOCALES.map((code) =>
      h('option', { value: code, lang: code, selected: code === s.locale }, LOCALE_NAMES[code]),
    ),
  );
  select.value = s.locale;
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
          onclick: () => s.connect(null),
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
