import { isBenign } from '../../problems.ts';
import { h, icon, ICONS } from '../dom.ts';
import { t, type MessageKey } from '../i18n.ts';
import type { StatusAction, StatusModel, Tone } from './status.ts';

const TONE_ICONS: Record<Tone, readonly string[] | null> = {
  info: ICONS.info,
  success: ICONS.check,
  warning: ICONS.alert,
  error: ICONS.alert,
  progress: null,
};

const BUTTONS: Record<
  StatusAction['kind'],
  { label: MessageKey; testId: string; primary: boolean }
> = {
  retry: { label: 'retryButton', testId: 'retry-button', primary: true },
  grant: { label: 'grantButton', testId: 'grant-permission-button', primary: true },
  dismiss: { label: 'dismissButton', testId: 'dismiss-button', primary: false },
};

/** The status line's parts, written in popup.html so that the live region exists from the start. */
function parts(region: HTMLElement) {
  const find = (selector: string) => {
    const element = region.querySelector<HTMLElement>(selector);
    if (element === null) throw new Error(`${selector} is missing from the status line`);
    return element;
  };
  return {
    notice: find('.notice'),
    icon: find('.notice-icon-slot'),
    message: find('.notice-message'),
    actions: find('.notice-actions'),
  };
}

/**
 * The status line. Only its message is a live region, rewritten only when the message changes
 * (`key`), so a screen reader announces each message once, and without the buttons beside it.
 * Returns the key now shown.
 */
export function renderStatus(
  region: HTMLElement,
  model: StatusModel | null,
  shownKey: string,
  run: (action: StatusAction) => void,
): string {
  region.dataset['state'] = model?.state ?? 'idle';
  if (model?.problem !== undefined) region.dataset['problem'] = model.problem;
  else delete region.dataset['problem'];
  const key = model === null ? '' : `${model.key}|${model.text}`;
  if (key === shownKey) return key;
  const { notice, icon: iconSlot, message, actions } = parts(region);
  if (model === null) {
    notice.className = 'notice';
    for (const part of [iconSlot, message, actions]) part.replaceChildren();
    return key;
  }
  notice.className = `notice notice--${model.tone}`;
  const toneIcon = TONE_ICONS[model.tone];
  iconSlot.replaceChildren(
    model.tone === 'progress'
      ? h('span', { class: 'spinner', 'aria-hidden': 'true' })
      : toneIcon === null
        ? ''
        : icon(toneIcon, 'icon notice-icon'),
  );
  const connecting = model.state === 'connecting';
  const [title, ...rest] = connecting ? [t('connectingTitle'), t('connectingBody')] : [model.text];
  message.replaceChildren(
    h(
      'p',
      { class: 'notice-text', 'data-testid': 'status-message' },
      connecting ? h('strong', {}, title) : title,
    ),
    ...rest.map((line) => h('p', { class: 'notice-sub' }, line)),
    ...(model.detail === undefined
      ? []
      : [h('p', { class: 'notice-detail mono', 'data-testid': 'status-detail' }, model.detail)]),
    ...(model.problem !== undefined && !isBenign(model.problem) && model.problem !== 'access_denied'
      ? [h('p', { class: 'notice-code' }, t('problemCode', model.problem))]
      : []),
  );
  actions.replaceChildren(
    ...model.actions.map((action) => {
      const button = BUTTONS[action.kind];
      return h(
        'button',
        {
          type: 'button',
          class: button.primary ? 'btn btn--small btn--primary' : 'btn btn--small btn--quiet',
          'data-testid': button.testId,
          'data-focus': `status:${button.testId}`,
          onclick: () => run(action),
        },
        t(button.label),
      );
    }),
  );
  return key;
}
