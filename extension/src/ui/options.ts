import type { Locale } from '@baton/shared';
import { hostPermissionFor, parseBrokerUrl } from '../broker-url.ts';
import { LOCALE_NAMES, PICKER_LOCALES, isPickerLocale, localeFromLanguages } from '../locale.ts';
import type { MessageRequest, MessageResponse, MessageType, SettingsView } from '../messaging.ts';
import { h } from './dom.ts';
import { t } from './i18n.ts';
import { BROKER_URL_MESSAGES } from './problem-text.ts';

/**
 * The options page: the broker URL (validated here first, so that `permissions.request` can run
 * straight from the click, then saved by the background), the default language of the
 * authorization pages, and the redirect URL the broker's operator must allow.
 */
export interface OptionsDeps {
  readonly send: <K extends MessageType>(
    type: K,
    data: MessageRequest<K>,
  ) => Promise<MessageResponse<K>>;
  readonly requestHostPermission: (pattern: string) => Promise<boolean>;
  readonly copy: (text: string) => Promise<void>;
  readonly languages: readonly string[];
}

export function mountOptions(root: HTMLElement, deps: OptionsDeps): void {
  let settings: SettingsView | null = null;

  const status = h('p', {
    class: 'page-status',
    role: 'status',
    'aria-live': 'polite',
    'data-testid': 'options-status',
  });
  const say = (text: string) => {
    status.textContent = text;
  };

  // ---- broker URL ---------------------------------------------------------------------------
  const brokerInput = h('input', {
    id: 'broker-url',
    type: 'url',
    inputmode: 'url',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'broker-help broker-error',
    'data-testid': 'broker-url-input',
  });
  // An alert, in the page from the start: its sentence is read out when it appears, also when
  // Enter in the field submits (focus then stays in the field, and nothing else would say it).
  const brokerError = h('p', {
    id: 'broker-error',
    class: 'field-error',
    role: 'alert',
    'data-testid': 'broker-url-error',
  });
  const brokerHelp = h('p', { id: 'broker-help', class: 'field-help' });
  const permissionLine = h('p', { class: 'field-help', 'data-testid': 'broker-permission' });
  // Shown, and the field locked, when the organisation sets the broker (managed storage).
  const brokerManagedLine = h(
    'p',
    { class: 'field-help field-managed', hidden: true, 'data-testid': 'broker-managed' },
    t('managedBroker'),
  );
  const brokerSaveButton = h(
    'button',
    { type: 'submit', class: 'btn btn--primary', 'data-testid': 'broker-url-save' },
    t('brokerSave'),
  );
  const brokerResetButton = h(
    'button',
    {
      type: 'button',
      class: 'btn btn--quiet',
      'data-testid': 'broker-url-reset',
      onclick: () => void saveBroker(null),
    },
    t('brokerReset'),
  );

  function showBrokerError(text: string | null): void {
    brokerError.textContent = text ?? '';
    if (text === null) brokerInput.removeAttribute('aria-invalid');
    else brokerInput.setAttribute('aria-invalid', 'true');
  }

  async function saveBroker(value: string | null): Promise<void> {
    say('');
    let candidate: string | null = null;
    if (value !== null) {
      const parsed = parseBrokerUrl(value);
      if (!parsed.ok) {
        showBrokerError(t(BROKER_URL_MESSAGES[parsed.problem]));
        brokerInput.focus();
        return;
      }
      candidate = parsed.url;
    }
    // The first await of the click: Firefox only shows the prompt inside the user gesture.
    const granted = await deps
      .requestHostPermission(hostPermissionFor(candidate ?? settings?.defaultBrokerUrl ?? ''))
      .catch(() => false);
    if (!granted) {
      showBrokerError(t('brokerPermissionDenied'));
      return;
    }
    try {
      const result = await deps.send('settings.save', { brokerUrl: candidate });
      if (!result.ok) {
        showBrokerError(
          result.problem === 'permission_missing'
            ? t('brokerPermissionDenied')
            : result.problem === 'managed'
              ? t('managedRefused')
              : t(BROKER_URL_MESSAGES[result.problem]),
        );
        return;
      }
      showBrokerError(null);
      apply(result.settings);
      say(t('brokerSaved'));
    } catch {
      say(t('saveFailed'));
    }
  }

  const brokerForm = h(
    'form',
    {
      class: 'field',
      novalidate: true,
      onsubmit: (event) => {
        event.preventDefault();
        void saveBroker(brokerInput.value);
      },
    },
    h('label', { for: 'broker-url', class: 'field-label' }, t('brokerLabel')),
    brokerHelp,
    h('div', { class: 'field-row' }, brokerInput, brokerSaveButton, brokerResetButton),
    brokerManagedLine,
    brokerError,
    permissionLine,
  );

  // ---- default language -----------------------------------------------------------------------
  const autoLocale = localeFromLanguages(deps.languages);
  const localeChoices: readonly { value: Locale | 'auto'; label: string }[] = [
    { value: 'auto', label: t('localeAuto', LOCALE_NAMES[autoLocale]) },
    ...PICKER_LOCALES.map((code) => ({ value: code, label: LOCALE_NAMES[code] })),
  ];
  const localeFieldset = h(
    'fieldset',
    { class: 'field choices', 'data-testid': 'default-locale' },
    h('legend', { class: 'field-label' }, t('localeLegend')),
    localeChoices.map((choice) =>
      h(
        'label',
        { class: 'choice' },
        h('input', {
          type: 'radio',
          name: 'locale',
          value: choice.value,
          'data-testid': `default-locale-${choice.value}`,
          onchange: (event) => {
            const value = (event.target as HTMLInputElement).value;
            void saveLocale(isPickerLocale(value) ? value : null);
          },
        }),
        h('span', choice.value === 'auto' ? {} : { lang: choice.value }, choice.label),
      ),
    ),
  );

  const localeManagedLine = h(
    'p',
    { class: 'field-help field-managed', hidden: true, 'data-testid': 'locale-managed' },
    t('managedLocale'),
  );
  localeFieldset.append(localeManagedLine);

  async function saveLocale(locale: Locale | null): Promise<void> {
    try {
      const result = await deps.send('settings.save', { locale });
      if (result.ok) {
        apply(result.settings);
        say(t('localeSaved'));
      } else say(t('managedRefused'));
    } catch {
      say(t('saveFailed'));
    }
  }

  // ---- redirect URL ---------------------------------------------------------------------------
  const redirectInput = h('input', {
    id: 'redirect-url',
    type: 'text',
    readonly: true,
    class: 'mono',
    'aria-describedby': 'redirect-help',
    'data-testid': 'redirect-url',
  });
  const redirectField = h(
    'div',
    { class: 'field' },
    h('label', { for: 'redirect-url', class: 'field-label' }, t('redirectLabel')),
    h('p', { id: 'redirect-help', class: 'field-help' }, t('redirectHelp')),
    h(
      'div',
      { class: 'field-row' },
      redirectInput,
      h(
        'button',
        {
          type: 'button',
          class: 'btn btn--quiet',
          'data-testid': 'redirect-url-copy',
          onclick: () => {
            deps.copy(redirectInput.value).then(
              () => say(t('copied')),
              () => {
                redirectInput.select();
                say(t('copyFailed'));
              },
            );
          },
        },
        t('copyButton'),
      ),
    ),
  );

  function apply(next: SettingsView): void {
    settings = next;
    brokerInput.value = next.brokerUrl;
    brokerHelp.textContent = t('brokerHelp', next.defaultBrokerUrl);
    permissionLine.textContent = next.hostPermissionGranted
      ? t('permissionGranted')
      : t('permissionMissing');
    permissionLine.dataset['granted'] = String(next.hostPermissionGranted);
    redirectInput.value = next.redirectUrl;
    for (const input of localeFieldset.querySelectorAll<HTMLInputElement>('input[type=radio]')) {
      input.checked = input.value === (next.locale ?? 'auto');
      input.disabled = next.managed.locale;
    }
    localeManagedLine.hidden = !next.managed.locale;
    // What the organisation sets is shown as such and cannot be edited here.
    brokerInput.readOnly = next.managed.brokerUrl;
    brokerSaveButton.hidden = next.managed.brokerUrl;
    brokerResetButton.hidden = next.managed.brokerUrl;
    brokerManagedLine.hidden = !next.managed.brokerUrl;
    brokerForm.dataset['managed'] = String(next.managed.brokerUrl);
    localeFieldset.dataset['managed'] = String(next.managed.locale);
  }

  root.replaceChildren(
    h(
      'main',
      { class: 'page' },
      h('h1', { class: 'page-title' }, t('optionsTitle')),
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'broker-title' },
        h('h2', { id: 'broker-title' }, t('brokerSection')),
        brokerForm,
      ),
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'locale-title' },
        h('h2', { id: 'locale-title' }, t('localeSection')),
        localeFieldset,
      ),
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'redirect-title' },
        h('h2', { id: 'redirect-title' }, t('redirectSection')),
        redirectField,
      ),
      status,
    ),
  );

  deps.send('settings.get', null).then(apply, () => say(t('loadFailed')));
}
