import { describe, expect, it } from 'vitest';
import { errorPage, PAGE_LOCALES, type Page } from './pages.ts';

const PAGES: Page[] = [
  { kind: 'bad_parameter', parameter: 'code_challenge' },
  { kind: 'redirect_not_allowed' },
  { kind: 'no_flow' },
  { kind: 'unavailable' },
  { kind: 'server_error' },
];

describe('the authorization window pages', () => {
  it.each(PAGE_LOCALES)('are written in %s, every one with a way out', (locale) => {
    const close = {
      en: 'You can close this window',
      fr: 'Vous pouvez fermer cette fenêtre',
      nl: 'U kunt dit venster sluiten',
    }[locale];
    const bodies = PAGES.map((page) => errorPage(page, locale));
    for (const body of bodies) {
      expect(body).toContain(`<html lang="${locale}">`);
      expect(body).toContain(close);
    }
    // Five pages, five different sentences: none falls back to another language's.
    expect(new Set(bodies.map((body) => /<p>([^<]*)<\/p>/.exec(body)?.[1])).size).toBe(5);
  });

  it('speaks each language of the popup', () => {
    expect(errorPage({ kind: 'no_flow' }, 'fr')).toContain('Aucune connexion n&#39;est en cours');
    expect(errorPage({ kind: 'no_flow' }, 'nl')).toContain('geen aanmelding bezig');
    expect(errorPage({ kind: 'unavailable' }, 'nl')).toContain('Baton is niet beschikbaar');
  });

  it('escapes what it repeats of the request', () => {
    const body = errorPage({ kind: 'bad_parameter', parameter: '<script>' }, 'en');
    expect(body).toContain('&quot;&lt;script&gt;&quot;');
    expect(body).not.toContain('<script>');
  });
});
