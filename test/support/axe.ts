import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { UiPage } from './browsers.ts';

/**
 * axe-core, the published accessibility checker, run inside a page of either browser: its source
 * is evaluated in the page (as the browser's own tools would inject it), then `axe.run` checks
 * the whole document against WCAG 2.0 and 2.1, levels A and AA, and axe's best practices.
 */
const AXE_SOURCE = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] as const;

/** One line per violation: rule, impact, what it means, and the elements that break it. */
export async function axeViolations(page: UiPage): Promise<string[]> {
  if (!(await page.evaluate<boolean>(`typeof globalThis.axe === 'object'`)))
    await page.evaluate(`${await AXE_SOURCE};\nundefined`);
  return page.evaluate<string[]>(`(async () => {
    const results = await axe.run(document, {
      runOnly: { type: 'tag', values: ${JSON.stringify(AXE_TAGS)} },
      resultTypes: ['violations'],
    });
    return results.violations.map((v) =>
      v.id + ' (' + v.impact + '): ' + v.help + ' — ' +
      v.nodes.map((n) => n.target.join(' ')).join(', '));
  })()`);
}
