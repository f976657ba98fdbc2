// Owns the rule that webhooks reach only public addresses: checked when an endpoint is registered and
// again when each delivery connects (a name may resolve elsewhere by then). Loopback, private,
// link-local (cloud metadata), carrier-grade NAT, reserved and multicast ranges are refused unless
// the operator allowed private networks (WEBHOOK_ALLOW_PRIVATE, on in the embedded sandbox).
import dns from 'node:dns';
import ipaddr from 'ipaddr.js';
import { explainedPattern, IPV4, IPV6, PORT } from '../platform/http/patterns.ts';

export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  return parsed.range() === 'unicast';
}

export class AddressRefused extends Error {}

/** A dns.lookup replacement for the HTTP client that refuses non-public addresses at connect time. */
export function guardedLookup(allowPrivate: boolean) {
  return (
    hostname: string,
    options: dns.LookupOptions,
    callback: (
      error: NodeJS.ErrnoException | null,
      address: string | dns.LookupAddress[],
      family?: number,
    ) => void,
  ) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses as dns.LookupAddress[];
      const refused = list.find((a) => !allowPrivate && !isPublicAddress(a.address));
      if (refused) {
        return callback(
          new AddressRefused(`${hostname} resolves to ${refused.address}, which is not a public address`),
          '',
        );
      }
      if (options.all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(new AddressRefused(`${hostname} did not resolve`), '');
      return callback(null, first.address, first.family);
    });
  };
}

/**
 * Why a delivery to `raw` must not be sent, checked just before connecting: the scheme, and a host
 * written as an IP address (the connection skips the name look-up for those, so guardedLookup never
 * sees them). A URL registered while private networks were allowed is refused once they are not.
 */
export function sendProblem(raw: string, allowPrivate: boolean): string | undefined {
  if (allowPrivate) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'the URL is not valid';
  }
  if (url.protocol !== 'https:') return `${url.protocol} is not allowed; webhooks must use https`;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host) && !isPublicAddress(host)) return `${host} is not a public address`;
  return undefined;
}

const LABEL = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/** A host name whose last label starts with a letter (a name ending in a number is read as an IPv4 address). */
const HOST_NAME = `(${LABEL}\\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?`;

/**
 * What a webhook URL looks like, as the request schema states it: http or https, a host name, an IPv4
 * address or a bracketed IPv6 address, an optional port, no user name or password, any path, query
 * and fragment. The rest of the rule (https unless WEBHOOK_ALLOW_PRIVATE, a public address) depends
 * on the configuration and on DNS, so only urlProblem can judge it.
 */
export const WEBHOOK_URL_PATTERN = explainedPattern(
  `^https?://(${IPV4}|\\[(${IPV6})\\]|${HOST_NAME})(:${PORT})?([/?#]\\S*)?$`,
  'must be an absolute https URL (http only with WEBHOOK_ALLOW_PRIVATE): a host name or IP address, an optional port, no user name or password',
);
const WEBHOOK_URL = new RegExp(WEBHOOK_URL_PATTERN);

/** Why a webhook URL cannot be registered, or undefined when it can. */
export async function urlProblem(raw: string, allowPrivate: boolean): Promise<string | undefined> {
  if (!WEBHOOK_URL.test(raw)) return 'must be an absolute http(s) URL with a host and no credentials';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return allowPrivate ? 'must use https or http' : 'must use https';
  }
  if (url.username || url.password) return 'must not carry credentials';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (allowPrivate) return undefined;
  if (ipaddr.isValid(host))
    return isPublicAddress(host) ? undefined : `points at ${host}, which is not a public address`;
  try {
    const addresses = await dns.promises.lookup(host, { all: true });
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused) return `resolves to ${refused.address}, which is not a public address`;
    return undefined;
  } catch {
    return `host ${host} does not resolve`;
  }
}
