/**
 * The development extension's stable identities (a committed public `key` for Chrome, a fixed
 * `gecko.id` for Firefox), so the broker's development default for EXTENSION_REDIRECT_URLS matches
 * the built extension out of the box. Filled in by the extension work.
 */
export const DEV_CHROME_EXTENSION_ID = 'TODO';
export const DEV_FIREFOX_GECKO_ID = 'TODO';
export const DEV_EXTENSION_REDIRECT_URLS: readonly string[] = [];
