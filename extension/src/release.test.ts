import { describe, expect, it } from 'vitest';
import { releaseSettings } from './release.ts';

describe('releaseSettings', () => {
  it('takes an https broker and a Firefox add-on id', () => {
    expect(
      releaseSettings({
        WXT_BROKER_URL: 'https://broker.example.be/',
        WXT_GECKO_ID: 'baton@example.be',
      }),
    ).toEqual({
      brokerUrl: 'https://broker.example.be',
      geckoId: 'baton@example.be',
      apiOrigins: [],
    });
    expect(
      releaseSettings({
        WXT_BROKER_URL: 'https://broker.example.be',
        WXT_GECKO_ID: '{0f2b1a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b}',
      }).geckoId,
    ).toBe('{0f2b1a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b}');
  });

  it('takes the https origins whose content scripts may use the API', () => {
    expect(
      releaseSettings({
        WXT_BROKER_URL: 'https://broker.example.be',
        WXT_GECKO_ID: 'baton@example.be',
        WXT_API_ORIGINS: 'https://app.example.be',
      }).apiOrigins,
    ).toEqual([{ scheme: 'https', host: 'app.example.be', subdomains: false }]);
  });

  it.each([
    [
      'nothing',
      {},
      ['WXT_BROKER_URL is required', 'WXT_GECKO_ID (the Firefox add-on id) is required'],
    ],
    [
      'a plain-http broker, even on loopback',
      { WXT_BROKER_URL: 'http://127.0.0.1:8787', WXT_GECKO_ID: 'baton@example.be' },
      ['WXT_BROKER_URL must be https in a release build'],
    ],
    [
      'a broken URL and a bad id',
      { WXT_BROKER_URL: 'broker', WXT_GECKO_ID: 'baton' },
      ['WXT_BROKER_URL is not a valid broker URL (not_a_url)', 'WXT_GECKO_ID must be'],
    ],
    [
      'an API origin on plain http, even on loopback',
      {
        WXT_BROKER_URL: 'https://broker.example.be',
        WXT_GECKO_ID: 'baton@example.be',
        WXT_API_ORIGINS: 'https://app.example.be, http://127.0.0.1',
      },
      ['WXT_API_ORIGINS: "http://127.0.0.1" is plain http'],
    ],
  ])('refuses %s, naming every problem', (_name, env, problems) => {
    expect(() => releaseSettings(env)).toThrow();
    try {
      releaseSettings(env);
    } catch (error) {
      for (const problem of problems) expect((error as Error).message).toContain(problem);
    }
  });
});
