// @ts-check
/* global document, HTMLElement */
/**
 * The page's few DOM helpers. Data reaches the page through textContent and attributes only,
 * never as markup: a licence URL is the provider's, hence user-influenced.
 */

/**
 * The element `#id`, of the kind expected (a missing one is a bug of the page, said at once).
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} kind
 * @returns {T}
 */
export function byId(id, kind) {
  const node = document.getElementById(id);
  if (!(node instanceof kind)) throw new Error(`the page lacks #${id}`);
  return node;
}

/**
 * An element with text, a class, attributes and children.
 * @param {string} tag
 * @param {{ text?: string, className?: string, attrs?: Record<string, string> }} [options]
 * @param {(Node | string)[]} [children]
 */
export function el(tag, options = {}, children = []) {
  const node = document.createElement(tag);
  if (options.text !== undefined) node.textContent = options.text;
  if (options.className !== undefined) node.className = options.className;
  for (const [name, value] of Object.entries(options.attrs ?? {})) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** An instant, to the minute in UTC (the headings say so), its ISO form kept in `datetime`. */
export function time(/** @type {string | null} */ iso) {
  if (iso === null) return el('span', { text: '—' });
  const date = new Date(iso);
  const text = Number.isNaN(date.getTime())
    ? iso
    : date.toISOString().slice(0, 16).replace('T', ' ');
  return el('time', { text, attrs: { datetime: iso } });
}

/** `1 connection`, `2 connections`. */
export const plural = (
  /** @type {number} */ count,
  /** @type {string} */ one,
  /** @type {string} */ many,
) => `${count} ${count === 1 ? one : many}`;

/**
 * Says something in the page's live region (read out by screen readers).
 * @param {string} text
 * @param {'info' | 'done' | 'error'} [kind]
 */
export function say(text, kind = 'info') {
  const message = byId('message', HTMLElement);
  message.className = `message ${kind}`;
  message.textContent = text;
}

/**
 * An action's button (operators only: a viewer is given none). `label` names the target too, for
 * a screen reader going through a table of them; it begins with the visible text.
 * @param {{ text: string, label: string, action: string, danger?: boolean, run: () => void }} spec
 */
export function actionButton(spec) {
  const button = el('button', {
    text: spec.text,
    className: spec.danger ? 'danger' : 'quiet',
    attrs: { type: 'button', 'data-action': spec.action, 'aria-label': spec.label },
  });
  button.addEventListener('click', spec.run);
  return button;
}
