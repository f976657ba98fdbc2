// Ids and secrets (src/platform/ids.ts, src/auth/api-keys.ts): an id is its prefix and 22 base62
// characters; a secret carries at least the randomness asked for, in base62, and an API key made
// with one parses back to its id and secret.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateApiKey, hashSecret, parseApiKey } from '../../src/auth/api-keys.ts';
import { idPattern, newId, randomSecret } from '../../src/platform/ids.ts';

test('an id is its prefix and 22 base62 characters', () => {
  assert.match(newId('patient'), new RegExp(idPattern('patient')));
});

test('a secret of 32 bytes is 43 base62 characters, a fresh one each time', () => {
  const secrets = new Set(Array.from({ length: 100 }, () => randomSecret(32)));
  assert.equal(secrets.size, 100);
  for (const secret of secrets) assert.match(secret, /^[0-9A-Za-z]{43}$/);
});

test('an API key parses back to its id and a secret of the stored hash', () => {
  const made = generateApiKey();
  const parsed = parseApiKey(made.key);
  assert.ok(parsed);
  assert.equal(parsed.id, made.id);
  assert.deepEqual(hashSecret(parsed.secret), made.secretHash);
});
