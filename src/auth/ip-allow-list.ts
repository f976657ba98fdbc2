// Owns client address allow lists: IPv4 and IPv6 addresses and CIDR ranges in their usual written
// forms (ALLOWED_IP_PATTERN: dotted decimal IPv4 without leading zeros, IPv6 with `::` and an embedded
// IPv4, a prefix length in range); IPv4-mapped IPv6 addresses count as IPv4. The request schema states
// the pattern, and the service's check is the same pattern, so the document and the server agree.
import ipaddr from 'ipaddr.js';
import { explainedPattern, IPV4, IPV6 } from '../platform/http/patterns.ts';

/** An IPv4 or IPv6 address, or a CIDR range of either. */
export const ALLOWED_IP_PATTERN = explainedPattern(
  `^(${IPV4}(/(3[0-2]|[12]?\\d))?|(${IPV6})(/(12[0-8]|1[01]\\d|[1-9]?\\d))?)$`,
  'must be an IPv4 or IPv6 address or CIDR range (10.0.0.0/8, 2001:db8::/32)',
);
const ALLOWED_IP = new RegExp(ALLOWED_IP_PATTERN);

function parses(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return ipaddr.isValid(value);
  }
}

export function isValidCidr(value: string): boolean {
  return ALLOWED_IP.test(value) && parses(value);
}

function parseRange(value: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (value.includes('/')) return ipaddr.parseCIDR(value);
  const address = ipaddr.parse(value);
  return [address, address.kind() === 'ipv4' ? 32 : 128];
}

export function isAddressAllowed(address: string, allowList: string[]): boolean {
  if (allowList.length === 0) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  return allowList.some((entry) => {
    const [range, bits] = parseRange(entry);
    const normalisedRange =
      range.kind() === 'ipv6' && (range as ipaddr.IPv6).isIPv4MappedAddress()
        ? ([(range as ipaddr.IPv6).toIPv4Address(), Math.max(0, bits - 96)] as const)
        : ([range, bits] as const);
    return (
      parsed.kind() === normalisedRange[0].kind() &&
      parsed.match([normalisedRange[0], normalisedRange[1]] as never)
    );
  });
}
