/**
 * PKCE (RFC 7636) between the extension and the broker, S256 only. Uses Web Crypto, which the
 * service worker, the popup and Node 24 all have.
 */
/** RFC 7636's code verifier: 43 to 128 unreserved characters. */
export const CODE_VERIFIER_PATTERN = /^[A-Za-z0-9\-._~]{43,128}$/;
/** An S256 code challenge: a base64url SHA-256, unpadded (43 characters). */
export const CODE_CHALLENGE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function isCodeVerifier(value: string): boolean {
  return CODE_VERIFIER_PATTERN.test(value);
}

export function isCodeChallenge(value: string): boolean {
  return CODE_CHALLENGE_PATTERN.test(value);
}

export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** A fresh verifier of 32 random bytes (43 characters). */
export function createCodeVerifier(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

export async function codeChallengeS256(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}
