/**
 * Checks the colour pairs of src/ui/styles.css against WCAG 2.2 AA (4.5:1 for text, 3:1 for
 * focus rings and input borders), in the light and the dark theme. Exits 1 on a failure.
 *
 *   node extension/scripts/contrast.ts
 */
import { readFileSync } from 'node:fs';

const css = readFileSync(new URL('../src/ui/styles.css', import.meta.url), 'utf8');

function variables(block: string): Record<string, string> {
  return Object.fromEntries(
    [...block.matchAll(/--([\w-]+):\s*(#[0-9a-f]{6})\b/gi)].map((m) => [m[1] ?? '', m[2] ?? '']),
  );
}

const light = variables(css.slice(0, css.indexOf('@media (prefers-color-scheme: dark)')));
const dark = {
  ...light,
  ...variables(css.slice(css.indexOf('@media (prefers-color-scheme: dark)'))),
};

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5]
    .map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map((c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (b ?? 0);
}

function ratio(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return ((hi ?? 0) + 0.05) / ((lo ?? 0) + 0.05);
}

/** [foreground, background, minimum, where] */
const PAIRS: [string, string, number, string][] = [
  ['text', 'bg', 4.5, 'header'],
  ['text', 'surface', 4.5, 'page'],
  ['text', 'card', 4.5, 'cards'],
  ['muted', 'card', 4.5, 'secondary text on cards, busy quiet buttons ("Disconnecting…")'],
  ['muted', 'surface', 4.5, 'fact labels, updated-at'],
  ['accent', 'card', 4.5, 'links, quiet buttons'],
  ['accent', 'surface', 4.5, 'links on the page'],
  ['on-accent', 'accent', 4.5, 'primary buttons'],
  ['on-accent', 'accent-hover', 4.5, 'primary buttons, hovered'],
  ['success-text', 'success-bg', 4.5, 'connected pill, success notice'],
  ['warning-text', 'warning-bg', 4.5, 'disconnected pill, warnings'],
  ['error-text', 'error-bg', 4.5, 'error notice'],
  ['info-text', 'info-bg', 4.5, 'info and progress notice'],
  ['danger', 'surface', 4.5, 'sign-out button'],
  ['error-text', 'card', 4.5, 'field errors'],
  ['success-text', 'surface', 4.5, 'options status'],
  ['text', 'accent-soft', 4.5, 'count badge'],
  ['accent', 'accent-soft', 4.5, 'busy primary buttons ("Connecting…")'],
  ['focus', 'card', 3, 'focus ring on cards'],
  ['focus', 'surface', 3, 'focus ring on the page'],
  ['muted', 'card', 3, 'input borders'],
];

let failed = false;
for (const [theme, vars] of [
  ['light', light],
  ['dark', dark],
] as const) {
  for (const [fg, bg, min, where] of PAIRS) {
    const a = vars[fg];
    const b = vars[bg];
    if (a === undefined || b === undefined)
      throw new Error(`--${fg} or --${bg} missing in ${theme}`);
    const r = ratio(a, b);
    const ok = r >= min;
    failed ||= !ok;
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${theme.padEnd(5)} ${r.toFixed(2).padStart(5)}:1 ≥ ${min}  --${fg} on --${bg} (${where})`,
    );
  }
}
process.exit(failed ? 1 : 0);
