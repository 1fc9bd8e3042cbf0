import { describe, expect, it } from 'vitest';
import {
  contentScriptsProblem,
  DEVELOPMENT_API_ORIGINS,
  formatApiOrigins,
  matchPatternAllowed,
  matchPatternFor,
  mergeApiOrigins,
  originAllowed,
  parseApiOrigins,
  type ApiOrigin,
} from './api-origins.ts';

const listed = (raw: string): readonly ApiOrigin[] => {
  const parsed = parseApiOrigins(raw);
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  return parsed.origins;
};

describe('parseApiOrigins (WXT_API_ORIGINS)', () => {
  it('lists nothing when unset or empty', () => {
    expect(parseApiOrigins(undefined)).toEqual({ ok: true, origins: [] });
    expect(parseApiOrigins(' , ')).toEqual({ ok: true, origins: [] });
  });

  it('reads https hosts, *. subdomains and loopback http, separated by commas', () => {
    expect(
      listed(' https://app.example.com, https://*.example.org/ ,http://127.0.0.1,http://[::1]'),
    ).toEqual([
      { scheme: 'https', host: 'app.example.com', subdomains: false },
      { scheme: 'https', host: 'example.org', subdomains: true },
      { scheme: 'http', host: '127.0.0.1', subdomains: false },
      { scheme: 'http', host: '[::1]', subdomains: false },
    ]);
  });

  it.each([
    ['a port', 'https://app.example.com:8443', 'has a port'],
    ['a default port', 'https://app.example.com:443', 'has a port'],
    ['a path', 'https://app.example.com/app', 'is not scheme://host'],
    ['a query', 'https://app.example.com?x', 'is not scheme://host'],
    ['another scheme', 'ftp://app.example.com', 'is not scheme://host'],
    ['a match pattern', 'https://app.example.com/*', 'is not scheme://host'],
    ['every host', 'https://*', 'is not scheme://host'],
    ['credentials', 'https://me@app.example.com', 'is not written as the browser writes it'],
    [
      'capitals',
      'https://App.Example.com',
      'is not written as the browser writes it (app.example.com)',
    ],
    ['a wildcard on a top-level name', 'https://*.com', 'lists the subdomains of something'],
    ['a wildcard on an address', 'https://*.10.0.0.1', 'lists the subdomains of something'],
    ['plain http elsewhere', 'http://app.example.com', 'is plain http on a host other than'],
  ])('refuses %s', (_name, raw, problem) => {
    const parsed = parseApiOrigins(`https://ok.example.com, ${raw}`);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problems).toEqual([expect.stringContaining(problem)]);
  });

  it('names every problem at once', () => {
    const parsed = parseApiOrigins('https://a.example:1, http://b.example');
    expect(parsed.ok ? [] : parsed.problems).toHaveLength(2);
  });

  it('takes no plain http at all in a release build', () => {
    expect(parseApiOrigins('http://127.0.0.1', { release: true })).toEqual({
      ok: false,
      problems: ['"http://127.0.0.1" is plain http, which a release build never answers'],
    });
    expect(parseApiOrigins('https://app.example.com', { release: true }).ok).toBe(true);
  });
});

describe('originAllowed', () => {
  const origins = listed('https://app.example.com, https://*.example.org, http://127.0.0.1');

  it.each([
    ['https://app.example.com', true],
    ['https://app.example.com:8443', true],
    ['http://app.example.com', false],
    ['https://other.example.com', false],
    ['https://app.example.com.evil.test', false],
    ['https://example.org', true],
    ['https://a.b.example.org', true],
    ['https://badexample.org', false],
    ['http://127.0.0.1:4321', true],
    ['http://127.0.0.2:4321', false],
    ['http://localhost:4321', false],
    ['null', false],
    ['', false],
  ])('%s: %s', (origin, allowed) => {
    expect(originAllowed(origin, origins)).toBe(allowed);
  });
});

describe('matchPatternAllowed (content scripts at build time)', () => {
  const origins = listed('https://app.example.com, https://*.example.org, http://127.0.0.1');

  it.each([
    ['https://app.example.com/*', true],
    ['https://app.example.com/billing/*', true],
    ['https://*.example.org/*', true],
    ['https://*.eu.example.org/*', true],
    ['https://shop.example.org/*', true],
    ['http://127.0.0.1/tests/*', true],
    ['*://app.example.com/*', false],
    ['http://app.example.com/*', false],
    ['https://*.example.com/*', false],
    ['https://*/*', false],
    ['<all_urls>', false],
    ['http://127.0.0.2/*', false],
  ])('%s: %s', (pattern, allowed) => {
    expect(matchPatternAllowed(pattern, origins)).toBe(allowed);
  });

  it('covers each listed origin with its own pattern', () => {
    for (const origin of origins)
      expect(matchPatternAllowed(matchPatternFor(origin), origins)).toBe(true);
  });
});

describe('the list a build answers', () => {
  it('a development build adds the machine’s own pages (localhost, 127.0.0.1, any port) to the integrator’s, once', () => {
    const merged = mergeApiOrigins(
      listed('https://app.example.com, http://127.0.0.1'),
      DEVELOPMENT_API_ORIGINS,
    );

    expect(formatApiOrigins(merged)).toBe(
      'https://app.example.com,http://127.0.0.1,http://localhost',
    );
    expect(originAllowed('http://localhost:5173', merged)).toBe(true);
    expect(originAllowed('http://127.0.0.2:5173', merged)).toBe(false);
  });

  it('writes it back as WXT_API_ORIGINS reads it', () => {
    const origins = listed('https://app.example.com, https://*.example.org, http://[::1]');
    expect(listed(formatApiOrigins(origins))).toEqual(origins);
    expect(formatApiOrigins([])).toBe('');
  });
});

describe('contentScriptsProblem (the build’s check of declared content scripts)', () => {
  const app = { file: 'content-scripts/app.js', matches: ['https://app.example.com/*'] };

  it('finds none when every pattern is within the list', () => {
    expect(
      contentScriptsProblem([app], listed('https://app.example.com'), {
        release: false,
        listed: 'https://app.example.com',
      }),
    ).toBeNull();
  });

  it('in a development build, names each pattern beyond the list with its script, and the variable to set, to what, and how', () => {
    const problem = contentScriptsProblem(
      [app, { file: 'content-scripts/shop.js', matches: ['https://*.shop.example/*'] }],
      DEVELOPMENT_API_ORIGINS,
      { release: false, listed: undefined },
    );

    expect(problem).toContain('WXT_API_ORIGINS (unset)');
    expect(problem).toContain('  - https://app.example.com/* (content-scripts/app.js)');
    expect(problem).toContain('  - https://*.shop.example/* (content-scripts/shop.js)');
    expect(problem).toContain(
      'WXT_API_ORIGINS=https://app.example.com,https://*.shop.example bash scripts/baton start',
    );
    expect(problem).toContain('docs/extending.md');
  });

  it('keeps what is listed already in the value to set', () => {
    const problem = contentScriptsProblem([app], listed('https://other.example.com'), {
      release: false,
      listed: 'https://other.example.com',
    });

    expect(problem).toContain('WXT_API_ORIGINS (https://other.example.com)');
    expect(problem).toContain(
      'WXT_API_ORIGINS=https://other.example.com,https://app.example.com bash scripts/baton start',
    );
  });

  it('leaves out what a development build lists by itself', () => {
    const problem = contentScriptsProblem(
      [app],
      mergeApiOrigins(listed('http://127.0.0.1'), DEVELOPMENT_API_ORIGINS),
      { release: false, listed: 'http://127.0.0.1' },
    );

    expect(problem).toContain('  WXT_API_ORIGINS=https://app.example.com bash scripts/baton start');
  });

  it('in a release build, says how to set it for the release command (https only)', () => {
    const problem = contentScriptsProblem(
      [app, { file: 'content-scripts/dev.js', matches: ['http://localhost/*'] }],
      [],
      { release: true, listed: undefined },
    );

    expect(problem).toContain(
      'WXT_API_ORIGINS=https://app.example.com pnpm --filter @baton/extension release',
    );
    expect(problem).toContain(
      '  - http://localhost/* (content-scripts/dev.js): no entry of WXT_API_ORIGINS can list it',
    );
    expect(problem).toContain('.ci/run');
  });

  it.each([
    ['<all_urls>'],
    ['*://app.example.com/*'],
    ['https://*/*'],
    ['http://app.example.com/*'],
  ])('says that %s cannot be listed at all, and suggests nothing for it', (pattern) => {
    const problem = contentScriptsProblem(
      [{ file: 'content-scripts/x.js', matches: [pattern] }],
      [],
      { release: false, listed: undefined },
    );

    expect(problem).toContain(
      `  - ${pattern} (content-scripts/x.js): no entry of WXT_API_ORIGINS can list it`,
    );
    expect(problem).not.toContain('WXT_API_ORIGINS=');
  });
});
