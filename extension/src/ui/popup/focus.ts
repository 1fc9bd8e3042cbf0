/**
 * Whether the user's last input was the keyboard. Focus moved by the popup (the element the user
 * was on was rebuilt, or went away) then shows its ring as a keyboard user expects; a pointer
 * user's click leaves none. Chromium infers this by itself; Firefox does not once the element
 * that had focus has left the page, hence `focusVisible`.
 */
let keyboardLast = false;

/** Follows the user's input from now on (the popup calls it once, at start). */
export function watchInputModality(target: EventTarget): void {
  target.addEventListener('keydown', () => (keyboardLast = true), { capture: true });
  target.addEventListener('pointerdown', () => (keyboardLast = false), { capture: true });
}

function moveFocus(element: HTMLElement | null): void {
  element?.focus({ focusVisible: keyboardLast });
}

/**
 * Re-render without losing the user's place: the DOM is rebuilt on every change, so the element
 * that had focus is found again by its `data-focus` key (or, if it is gone, the screen's heading
 * takes focus) and keyboard and screen-reader users stay where they were. Every element that can
 * take focus in a rebuilt part, headings included, carries a `data-focus` key.
 */
export function keepingFocus(render: () => void): void {
  const focused = document.activeElement;
  const focusKey = focused?.getAttribute('data-focus') ?? null;
  render();
  if (focusKey === null || focused === null || focused.isConnected) return;
  moveFocus(
    document.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focusKey)}"]`) ?? heading(),
  );
}

/** The heading of the screen shown: the list's, else the signed-out screen's. */
function heading(): HTMLElement | null {
  return document.getElementById('licenses-title') ?? document.getElementById('intro-title');
}

/**
 * After an element the user acted on is gone for good (a removed card, the last one included):
 * focus the screen's heading.
 */
export function focusListIfLost(): void {
  if (document.activeElement === document.body || document.activeElement === null)
    moveFocus(heading());
}
