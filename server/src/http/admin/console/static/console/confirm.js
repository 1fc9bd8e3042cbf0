// @ts-check
/* global document, HTMLElement, HTMLButtonElement, HTMLDialogElement */
import { byId, say } from './dom.js';

/**
 * Every operator action is confirmed in the page's native <dialog> (modal: the page behind is
 * inert; Escape cancels), never window.confirm, which neither tests nor assistive technology
 * handle well.
 */

/** Wires the dialog's two buttons; once, at start. */
export function wireConfirm() {
  const dialog = byId('confirm', HTMLDialogElement);
  byId('confirm-ok', HTMLButtonElement).addEventListener('click', () => dialog.close('confirm'));
  byId('confirm-cancel', HTMLButtonElement).addEventListener('click', () => dialog.close('cancel'));
}

/**
 * Asks; resolves true on Confirm, false on Cancel or Escape. Focus starts on Cancel (the safe
 * choice) and goes back to where it was, or to `fallback` when that element is gone.
 * @param {{ title: string, text: string, confirm: string, fallback: HTMLElement }} question
 * @returns {Promise<boolean>}
 */
export function confirmed(question) {
  const dialog = byId('confirm', HTMLDialogElement);
  const opener = document.activeElement;
  byId('confirm-title', HTMLElement).textContent = question.title;
  byId('confirm-text', HTMLElement).textContent = question.text;
  byId('confirm-ok', HTMLButtonElement).textContent = question.confirm;
  dialog.returnValue = '';
  dialog.showModal();
  byId('confirm-cancel', HTMLButtonElement).focus();
  return new Promise((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        const back =
          opener instanceof HTMLElement && opener.isConnected ? opener : question.fallback;
        back.focus();
        resolve(dialog.returnValue === 'confirm');
      },
      { once: true },
    );
  });
}

/**
 * @typedef {object} Action
 * @property {string} title
 * @property {string} text
 * @property {string} confirm the confirming button's text
 * @property {() => Promise<import('../../../../../admin/types.ts').ActionResult>} send
 * @property {(count: number) => string} done what was done, from the result's count
 * @property {() => Promise<void>} after reloads what the action changed
 * @property {HTMLElement} fallback where focus goes when the button that asked is gone
 */

/**
 * An operator action: confirmed, sent, its outcome said, then what changed shown again.
 * @param {Action} action
 * @param {(error: unknown) => void} showError
 */
export async function act(action, showError) {
  if (!(await confirmed(action))) {
    say('Cancelled: nothing was changed.');
    return;
  }
  try {
    const result = await action.send();
    if (result.ok) say(action.done(result.count), 'done');
    else say(`Nothing was done: ${result.error ?? 'refused'}.`, 'error');
  } catch (error) {
    showError(error);
  }
  await action.after();
  // The row whose button asked is drawn anew: focus would fall to the page's start.
  if (document.activeElement === null || document.activeElement === document.body)
    action.fallback.focus();
}
