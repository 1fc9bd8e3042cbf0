import { createHash } from 'node:crypto';
import {
  DEV_CHROME_EXTENSION_ID,
  DEV_EXTENSION_REDIRECT_URLS,
  DEV_FIREFOX_GECKO_ID,
} from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { DEV_CHROME_PUBLIC_KEY } from './dev-identity.ts';

/** Chrome: first 32 hex characters of SHA-256 of the DER key, 0-f mapped to a-p. */
function chromeIdFromKey(base64Der: string): string {
  const hex = createHash('sha256').update(Buffer.from(base64Der, 'base64')).digest('hex');
  return [...hex.slice(0, 32)].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
}

describe('the development extension identities', () => {
  it('the Chrome id is the one the committed public key yields', () => {
    expect(chromeIdFromKey(DEV_CHROME_PUBLIC_KEY)).toBe(DEV_CHROME_EXTENSION_ID);
  });

  it('the committed key is an RSA 2048 SubjectPublicKeyInfo', () => {
    const der = Buffer.from(DEV_CHROME_PUBLIC_KEY, 'base64');
    expect(der.length).toBe(294);
    expect(der.subarray(0, 4).toString('hex')).toBe('30820122');
  });

  it('the redirect URLs are what identity.getRedirectURL() answers in Chrome and Firefox', () => {
    const firefoxHost = createHash('sha1').update(DEV_FIREFOX_GECKO_ID).digest('hex');
    expect(DEV_EXTENSION_REDIRECT_URLS).toEqual([
      `https://${chromeIdFromKey(DEV_CHROME_PUBLIC_KEY)}.chromiumapp.org/`,
      `https://${firefoxHost}.extensions.allizom.org/`,
    ]);
  });
});
