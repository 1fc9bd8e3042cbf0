/**
 * Re-render without losing the user's place: the DOM is rebuilt on every change, so the element
 * that had focus is found again by its `data-focus` key (or, if it is gone, the screen's heading
 * takes focus) and keyboard and screen-reader users stay where they were.
 */
export function keepingFocus(render: () => void): void {
  const focused = document.activeElement;
  const focusKey = focused?.getAttribute('data-focus') ?? null;
  render();
  if (focusKey === null || focused === null || focused.isConnected) return;
  const target =
    document.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focusKey)}"]`) ??
    document.getElementById('licences-title') ??
    document.getElementById('intro-title');
  target?.focus();
}

/** After an element the user acted on is gone for good (a removed card): focus the list. */
export function focusListIfLost(): void {
  if (document.activeElement === document.body || document.activeElement === null)
    document.getElementById('licences-title')?.focus();
}
