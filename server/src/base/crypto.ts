import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  hash,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';

/** Encryption keys by id; the first encrypts, all decrypt. */
export interface Keyring {
  activeKid: string;
  activeKey: KeyObject;
  keys: ReadonlyMap<string, KeyObject>;
}

const KID = /^[A-Za-z0-9_-]{1,32}$/;

/** `kid:base64(32 bytes)`, comma separated. */
export function parseKeyring(value: string): Keyring {
  const keys = new Map<string, KeyObject>();
  for (const item of value.split(',').map((part) => part.trim())) {
    const [kid, material, ...rest] = item.split(':');
    if (kid === undefined || material === undefined || rest.length > 0 || !KID.test(kid))
      throw new Error('entries must be kid:base64(32 bytes), with a kid of [A-Za-z0-9_-]');
    const bytes = Buffer.from(material, 'base64');
    if (bytes.length !== 32) throw new Error(`key ${kid} is not 32 bytes of base64`);
    if (keys.has(kid)) throw new Error(`key id ${kid} appears twice`);
    // Built once: a KeyObject makes each AES-GCM operation several times cheaper than a Buffer key.
    keys.set(kid, createSecretKey(bytes));
  }
  const [active] = keys;
  if (active === undefined) throw new Error('must hold at least one key');
  const [activeKid, activeKey] = active;
  return { activeKid, activeKey, keys };
}

/** GCM's full tag. A shorter one would open too, and each byte cut makes a forgery 256 times likelier. */
const TAG_BYTES = 16;

export class DecryptError extends Error {
  override name = 'DecryptError';
}

/** A record names a key id the keyring lacks: the configuration misses a key; the data is fine. */
export class MissingKeyError extends DecryptError {
  override name = 'MissingKeyError';
}

/**
 * AES-256-GCM with a random 96-bit IV per write. The blob is `kid.iv.tag.ciphertext` (base64url);
 * `aad` binds it to where it is stored, so a blob moved to another record fails to decrypt.
 */
export function createSealer(keyring: Keyring) {
  return {
    seal(plaintext: string, aad: string): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keyring.activeKey, iv, {
        authTagLength: TAG_BYTES,
      });
      cipher.setAAD(Buffer.from(aad));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'));
      return `${keyring.activeKid}.${parts.join('.')}`;
    },

    open(blob: string, aad: string): string {
      const [kid, iv, tag, ciphertext] = blob.split('.');
      if (kid === undefined || iv === undefined || tag === undefined || ciphertext === undefined)
        throw new DecryptError('not a sealed record');
      const key = keyring.keys.get(kid);
      if (!key) throw new MissingKeyError(`no key for a record sealed under "${kid}"`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), {
          authTagLength: TAG_BYTES,
        });
        decipher.setAAD(Buffer.from(aad));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([
          decipher.update(Buffer.from(ciphertext, 'base64url')),
          decipher.final(),
        ]).toString('utf8');
      } catch (cause) {
        throw new DecryptError('record failed authentication', { cause });
      }
    },

    /** Whether a blob was sealed under a key other than the active one. */
    isStale(blob: string): boolean {
      return !blob.startsWith(`${keyring.activeKid}.`);
    },
  };
}
export type Sealer = ReturnType<typeof createSealer>;

/** `bytes` random bytes as base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * SHA-256 as base64url: what the store keeps instead of a bearer secret. The one-shot `hash`: no
 * Hash object per call (a session check runs on every API call).
 */
export function hashToken(token: string): string {
  return hash('sha256', token, 'base64url');
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
