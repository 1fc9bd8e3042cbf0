/**
 * Renders assets/icon.svg into public/icon/<size>.png with headless Chromium (playwright-core
 * from the @baton/test workspace, Debian's /usr/bin/chromium). Run after changing the icon:
 *   node scripts/icons.ts
 */
import { readFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const svg = await readFile(`${root}assets/icon.svg`, 'utf8');
await mkdir(`${root}public/icon`, { recursive: true });

const browser = await launchChromium();
try {
  const page = await browser.newPage();
  for (const size of [16, 32, 48, 96, 128]) {
    await page.setViewportSize({ width: size, height: size });
    await page.setContent(
      `<html><body style="margin:0;background:transparent">` +
        `<img src="data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}" width="${size}" height="${size}" style="display:block">` +
        `</body></html>`,
    );
    await page.screenshot({ path: `${root}public/icon/${size}.png`, omitBackground: true });
    console.log(`public/icon/${size}.png`);
  }
} finally {
  await browser.close();
}
