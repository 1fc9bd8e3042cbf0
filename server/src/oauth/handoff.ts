import { codeChallengeS256 } from '@baton/shared';
import { hashToken, randomToken, safeEqual, type Sealer } from '../base/crypto.ts';
import { BrokerError } from '../base/errors.ts';
import { keys } from '../store/keys.ts';
import type { Store } from '../store/types.ts';
import type { TokenSet } from './provider.ts';

/** How long the extension has to redeem a handoff at POST /session. */
export const HANDOFF_TTL_MS = 60 * 1000;

/** What a handoff carries from the callback to POST /session. Sealed at rest. */
export interface HandoffPayload {
  apiUrl: string;
  /** The PKCE challenge of the flow: only the extension that started it holds the verifier. */
  challenge: string;
  createdAt: number;
  tokens: TokenSet;
}

const aad = (hash: string) => `handoff:${hash}`;

/**
 * The one-time handoff between the authorization window and the extension: issued at the callback
 * (a random code in the extension's redirect URL; the store keeps its hash and the sealed tokens,
 * 60 s), redeemed once at POST /session with the PKCE verifier.
 */
export function createHandoffs(deps: { store: Store; sealer: Sealer; now: () => number }) {
  const { store, sealer, now } = deps;
  return {
    /** A new handoff for these tokens; the code goes to the extension's redirect URL. */
    async issue(payload: Omit<HandoffPayload, 'createdAt'>): Promise<string> {
      const handoff = randomToken(32);
      const hash = hashToken(handoff);
      const sealed: HandoffPayload = { ...payload, createdAt: now() };
      await store.set(
        keys.handoff(hash),
        sealer.seal(JSON.stringify(sealed), aad(hash)),
        HANDOFF_TTL_MS,
      );
      return handoff;
    },

    /**
     * What the handoff carries, or invalid_grant. Consumed before it is checked: any attempt,
     * right or wrong, burns it, so a replay or a guess finds nothing.
     */
    async redeem(handoff: string, verifier: string): Promise<HandoffPayload> {
      const hash = hashToken(handoff);
      const sealed = await store.take(keys.handoff(hash));
      const rejected = new BrokerError('invalid_grant', 'The handoff is unknown, used or expired.');
      if (sealed === null) throw rejected;
      const payload = JSON.parse(sealer.open(sealed, aad(hash))) as HandoffPayload;
      if (now() - payload.createdAt >= HANDOFF_TTL_MS) throw rejected;
      if (!safeEqual(await codeChallengeS256(verifier), payload.challenge)) throw rejected;
      return payload;
    },
  };
}
export type Handoffs = ReturnType<typeof createHandoffs>;
