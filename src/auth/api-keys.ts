// Owns the API key format and its hashing. A key is `pbk_<id>_<secret>`; only SHA-256 of the secret
// is stored (the secret is 256 random bits, so a slow hash adds nothing). Comparison is constant-time.
import { createHash, timingSafeEqual } from 'node:crypto';
import { randomSecret, randomToken } from '../platform/ids.ts';

const KEY_PATTERN = /^pbk_([0-9A-Za-z]{22})_([0-9A-Za-z]{43})$/;

export interface NewApiKey {
  id: string;
  key: string;
  secretHash: Buffer;
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

export function generateApiKey(): NewApiKey {
  const idPart = randomToken(16);
  const secret = randomSecret(32);
  return { id: `key_${idPart}`, key: `pbk_${idPart}_${secret}`, secretHash: hashSecret(secret) };
}

export function parseApiKey(key: string): { id: string; secret: string } | undefined {
  const match = KEY_PATTERN.exec(key);
  if (!match) return undefined;
  return { id: `key_${match[1]}`, secret: match[2]! };
}

const DUMMY_HASH = hashSecret('no key has this secret');

/** Compares in constant time; with no stored hash it still does the same work. */
export function secretMatches(secret: string, storedHash: Buffer | undefined): boolean {
  const given = hashSecret(secret);
  const stored = storedHash && storedHash.length === given.length ? storedHash : DUMMY_HASH;
  return timingSafeEqual(given, stored) && storedHash !== undefined;
}
