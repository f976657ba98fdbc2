// Owns the shape of identifiers: a short prefix naming the kind, then 128 random bits in base62.
// Ids carry no order and no practice information, so they cannot be guessed or enumerated.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export const ID_PREFIXES = {
  practice: 'org',
  practitioner: 'prt',
  client: 'cli',
  apiKey: 'key',
  patient: 'pat',
  encounter: 'enc',
  diagnosis: 'dx',
  procedure: 'proc',
  invoice: 'inv',
  lineItem: 'li',
  claim: 'clm',
  codeSystem: 'cs',
  codeConcept: 'cc',
  coverage: 'cov',
  plan: 'pln',
  scheme: 'sch',
  payment: 'pay',
  refund: 'rfd',
  notification: 'ntf',
  mail: 'mail',
  price: 'prc',
  webhookEndpoint: 'whe',
  delivery: 'dlv',
  attempt: 'att',
  event: 'evt',
  job: 'job',
  submission: 'sub',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/**
 * Random bytes for ids are drawn from the system's CSPRNG this many at a time, each used once. Secrets
 * never come from this pool (randomSecret), so that their bytes do not linger in a shared buffer.
 */
const RANDOM_POOL_BYTES = 4096;
let randomPool = Buffer.alloc(0);
let randomOffset = 0;

function pooledByte(): number {
  if (randomOffset === randomPool.length) {
    randomPool = randomBytes(RANDOM_POOL_BYTES);
    randomOffset = 0;
  }
  return randomPool[randomOffset++]!;
}

/**
 * At least `bytes` bytes of randomness in base62: each character drawn uniformly (a random byte below
 * 248, taken modulo 62; the rest are skipped), ceil(bytes * 8 / log2 62) characters.
 */
function base62(bytes: number, nextByte: () => number): string {
  const length = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  while (out.length < length) {
    const byte = nextByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

/** A random base62 token for an identifier (see base62), from the shared pool. */
export function randomToken(bytes = 16): string {
  return base62(bytes, pooledByte);
}

/**
 * A random base62 token for a secret (an API key's, a token), from bytes drawn for it alone and
 * zeroed once used.
 */
export function randomSecret(bytes = 32): string {
  // Twice what is needed: about 3% of bytes are skipped, so more are drawn only in the rarest case.
  let drawn = randomBytes(bytes * 2);
  let offset = 0;
  const token = base62(bytes, () => {
    if (offset === drawn.length) {
      drawn.fill(0);
      drawn = randomBytes(bytes);
      offset = 0;
    }
    return drawn[offset++]!;
  });
  drawn.fill(0);
  return token;
}

/** The regular expression (source) every id of a kind matches: its prefix and 22 base62 characters. */
export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIXES[kind]}_[0-9A-Za-z]{22}$`;
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomToken(16)}`;
}
