/**
 * The popup's weight: popup.html and every script, preloaded chunk and stylesheet it loads, from
 * a build, raw and gzipped (level 9). Fails above the 50 KB gzipped budget.
 *
 *   pnpm --filter @baton/extension build && node extension/scripts/popup-size.ts [chrome-mv3]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const BUDGET = 50 * 1024;
const target = process.argv[2] ?? 'chrome-mv3';
const dir = fileURLToPath(new URL(`../.output/${target}/`, import.meta.url));
const html = readFileSync(join(dir, 'popup.html'), 'utf8');
const assets = [...html.matchAll(/(?:src|href)="\/([^"]+\.(?:js|css))"/g)].map((m) => m[1] ?? '');

let raw = 0;
let gz = 0;
for (const file of ['popup.html', ...new Set(assets)]) {
  const content = readFileSync(join(dir, file));
  const zipped = gzipSync(content, { level: 9 }).length;
  raw += content.length;
  gz += zipped;
  console.log(
    `${file.padEnd(40)} ${String(content.length).padStart(7)} B  ${String(zipped).padStart(6)} B gz`,
  );
}
console.log(
  `${'total'.padEnd(40)} ${String(raw).padStart(7)} B  ${String(gz).padStart(6)} B gz (budget ${BUDGET} B)`,
);
if (gz > BUDGET) process.exit(1);
