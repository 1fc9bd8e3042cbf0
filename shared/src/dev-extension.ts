/**
 * The development extension's stable identities (a committed public `key` for Chrome, a fixed
 * `gecko.id` for Firefox), so the broker's development default for EXTENSION_REDIRECT_URLS matches
 * the built extension out of the box.
 *
 * - Chrome: the id is the first 32 hex characters of SHA-256 of the manifest `key` (base64 DER
 *   SubjectPublicKeyInfo, committed in extension/src/dev-identity.ts), mapped 0-f to a-p.
 * - Firefox: `identity.getRedirectURL()` answers `https://<SHA-1 hex of the gecko id>.extensions.allizom.org/`.
 *
 * extension/src/dev-identity.test.ts recomputes both from the key and the gecko id.
 */
export const DEV_CHROME_EXTENSION_ID = 'liaokkfmbcchdpbdigmkaahmbpebclgd';
export const DEV_FIREFOX_GECKO_ID = 'baton@baton.example';
export const DEV_EXTENSION_REDIRECT_URLS: readonly string[] = [
  `https://${DEV_CHROME_EXTENSION_ID}.chromiumapp.org/`,
  'https://150e7fd694d3013abf8af71ef1fb773ac00cb500.extensions.allizom.org/',
];
