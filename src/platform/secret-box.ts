// Owns encrypting secrets at rest (webhook signing secrets, answers that show a secret): AES-256-GCM
// with a key from the configuration, so the database alone never reveals them. Stored as
// `v1.<iv>.<tag>.<ciphertext>`. One key seals (SECRET_ENCRYPTION_KEY); earlier keys
// (SECRET_ENCRYPTION_PREVIOUS_KEYS) only open, until `practice-billing secrets re-encrypt` has sealed
// everything again with the current one.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** What the box makes of one stored sealed value. */
export type SealedState = 'current' | 'previous' | 'unopenable';

function openWith(key: Buffer, sealed: string): string {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || !data) throw new Error('not a sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

export class SecretBox {
  readonly #key: Buffer;
  readonly #previous: readonly Buffer[];

  constructor(key: Buffer, previousKeys: readonly Buffer[] = []) {
    for (const k of [key, ...previousKeys]) {
      if (k.length !== 32) throw new Error('the secret encryption key must be 32 bytes');
    }
    this.#key = key;
    this.#previous = previousKeys;
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [
      'v1',
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      data.toString('base64url'),
    ].join('.');
  }

  /** Opens with the current key, else with each previous one; throws when none opens it. */
  open(sealed: string): string {
    return this.#opened(sealed).plain;
  }

  /** Which key opens the value: the current one, a previous one, or none. */
  stateOf(sealed: string): SealedState {
    try {
      return this.#opened(sealed).current ? 'current' : 'previous';
    } catch {
      return 'unopenable';
    }
  }

  /** The value sealed again with the current key when a previous key sealed it; else undefined. */
  resealed(sealed: string): string | undefined {
    const opened = this.#opened(sealed);
    return opened.current ? undefined : this.seal(opened.plain);
  }

  #opened(sealed: string): { plain: string; current: boolean } {
    let failure: unknown;
    for (const [i, key] of [this.#key, ...this.#previous].entries()) {
      try {
        return { plain: openWith(key, sealed), current: i === 0 };
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }
}
