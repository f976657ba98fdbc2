// Owns client address allow lists: IPv4 and IPv6 CIDR ranges; IPv4-mapped IPv6 addresses count as IPv4.
import ipaddr from 'ipaddr.js';

export function isValidCidr(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return ipaddr.isValid(value);
  }
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
