import { describe, expect, it } from 'vitest';
import { codeChallengeS256, createCodeVerifier, isCodeChallenge, isCodeVerifier } from './pkce.ts';

describe('PKCE S256', () => {
  it('matches the RFC 7636 appendix B example', async () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    expect(await codeChallengeS256(verifier)).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
  });

  it('creates verifiers that are valid and distinct, whose challenge is valid', async () => {
    const a = createCodeVerifier();
    const b = createCodeVerifier();
    expect(a).not.toBe(b);
    expect(isCodeVerifier(a)).toBe(true);
    expect(isCodeChallenge(await codeChallengeS256(a))).toBe(true);
  });

  it.each([
    ['too short', 'a'.repeat(42), false],
    ['shortest', 'a'.repeat(43), true],
    ['longest', 'a'.repeat(128), true],
    ['too long', 'a'.repeat(129), false],
    ['forbidden character', `${'a'.repeat(42)}+`, false],
  ])('verifier %s', (_name, verifier, valid) => {
    expect(isCodeVerifier(verifier)).toBe(valid);
  });
});
