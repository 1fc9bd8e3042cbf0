/**
 * The development public key that pins the Chrome extension id to DEV_CHROME_EXTENSION_ID
 * (see @baton/shared dev-extension.ts). Only the public half (base64 DER SubjectPublicKeyInfo,
 * RSA 2048) is committed; the private key was discarded: an unpacked extension needs none, and a
 * store build gets its id from the store.
 */
export const DEV_CHROME_PUBLIC_KEY =
  'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAn8C9Cvoi0BxVsJvrOrAqCVFtaoounfRroQ5cLFRr3TmtREz/5C5HLfybenLQcj/TrvphWu1eLU+ZTufc43Yd4Fik80OqK3LOnj3mZ6KN1sYX5+P8AhE6kpSpd7FVf1ohu8GglQ307K+IjE6ZF5N13FeuSN2QEbaXRZGBsUyt0bxxFRSolR2o9RmwuupIPE0aKyXmTS0Em5+z9biBQEaVU18w9tfMpd+oE9t1P7hJr9qBfzwV30riPpdo3Plw/CrnfA/a1mNJZftVXn3OnaiQ/hFFMS+GkOeo4dR44AQFXSKpkgm2nd055qWYkulwmU9CEIfngYpQ/UAEBS7uYdlIxQIDAQAB';
