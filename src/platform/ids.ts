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

export function randomToken(bytes = 16): string {
  let value = BigInt(`0x${randomBytes(bytes).toString('hex')}`);
  const length = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

/** The regular expression (source) every id of a kind matches: its prefix and 22 base62 characters. */
export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIXES[kind]}_[0-9A-Za-z]{22}$`;
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomToken(16)}`;
}
