import ipaddr from 'ipaddr.js';

/**
 * The addresses a TRUST_PROXY value trusts, as proxy-addr (Express's `trust proxy`) compiles it, so
 * that what is measured is what is applied. Both families in one space: IPv4 as IPv6 holds it
 * (IPv4-mapped, ::ffff:0:0/96), since proxy-addr matches a mapped address against IPv4 ranges.
 */

/** Addresses first to last, both included, in IPv6's space. */
interface Range {
  first: bigint;
  last: bigint;
}

export const BITS = { 4: 32, 6: 128 } as const;
/** proxy-addr's names, and the ranges it puts in their place. */
const NAMED: Record<string, string[]> = {
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  loopback: ['127.0.0.1/8', '::1/128'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};
/** IPv4 as IPv6 holds it (::ffff:0:0/96): one space for both families. */
const IPV4: Range = { first: 0xffffn << 32n, last: (0xffffn << 32n) + 2n ** 32n - 1n };
const EVERY: Range = { first: 0n, last: 2n ** 128n - 1n };
/** The host's own addresses (127.0.0.0/8, ::1): trusting them lets no other host choose its address. */
const HOST_ITSELF: Record<4 | 6, Range> = {
  4: { first: IPV4.first + (127n << 24n), last: IPV4.first + (128n << 24n) - 1n },
  6: { first: 1n, last: 1n },
};

/**
 * How many IPv4 and IPv6 addresses `entries` trust, as proxy-addr compiles them (names, addresses,
 * CIDR, IPv4 dotted netmasks; an IPv4-mapped IPv6 address trusts that IPv4 address): the size of
 * their union, loopback aside. IPv6 ranges count the part of ::ffff:0:0/96 they hold as IPv4,
 * whether or not the proxy-addr installed matches IPv4 clients against them (2.0.7 did). Or the
 * first entry it cannot read.
 */
export function trustedAddresses(entries: string[]): Record<4 | 6, bigint> | string {
  const ranges: Range[] = [];
  for (const entry of entries.flatMap((each) => NAMED[each] ?? [each])) {
    const range = rangeOf(entry);
    if (range === undefined) return entry;
    ranges.push(range);
  }
  const trusted = union(ranges);
  const ipv4 = sizeOf(trusted, IPV4);
  return {
    4: ipv4 - sizeOf(trusted, HOST_ITSELF[4]),
    6: sizeOf(trusted, EVERY) - ipv4 - sizeOf(trusted, HOST_ITSELF[6]),
  };
}

/** The addresses one entry trusts, as proxy-addr's parseipNotation reads it; a /0 too. */
function rangeOf(entry: string): Range | undefined {
  const slash = entry.lastIndexOf('/');
  const text = slash === -1 ? entry : entry.slice(0, slash);
  if (!ipaddr.isValid(text)) return undefined;
  const address = ipaddr.parse(text);
  const bits = address.kind() === 'ipv4' ? BITS[4] : BITS[6];
  const prefix = slash === -1 ? bits : prefixOf(entry.slice(slash + 1), address.kind());
  if (prefix === undefined || prefix > bits) return undefined;
  const offset = address.kind() === 'ipv4' ? IPV4.first : 0n;
  const value = offset + BigInt(`0x${Buffer.from(address.toByteArray()).toString('hex')}`);
  const size = 2n ** BigInt(bits - prefix);
  const first = value - (value % size);
  return { first, last: first + size - 1n };
}

/** A prefix length, or an IPv4 netmask's. */
function prefixOf(text: string, kind: 'ipv4' | 'ipv6'): number | undefined {
  if (/^\d+$/.test(text)) return Number(text);
  if (kind !== 'ipv4' || !ipaddr.isValid(text)) return undefined;
  const netmask = ipaddr.parse(text);
  return netmask.kind() === 'ipv4'
    ? (netmask.prefixLengthFromSubnetMask() ?? undefined)
    : undefined;
}

/** The same addresses as `ranges`, in order and not overlapping. */
function union(ranges: Range[]): Range[] {
  const merged: Range[] = [];
  for (const range of [...ranges].sort((a, b) => (a.first < b.first ? -1 : 1))) {
    const last = merged.at(-1);
    if (last !== undefined && range.first <= last.last + 1n) {
      if (range.last > last.last) last.last = range.last;
    } else merged.push({ ...range });
  }
  return merged;
}

/** How many addresses of `ranges` (not overlapping) lie `within`. */
function sizeOf(ranges: Range[], within: Range): bigint {
  let size = 0n;
  for (const range of ranges) {
    const first = range.first > within.first ? range.first : within.first;
    const last = range.last < within.last ? range.last : within.last;
    if (first <= last) size += last - first + 1n;
  }
  return size;
}

/** The longest prefix whose block holds `size` addresses of `family`. */
export function prefixHolding(size: bigint, family: 4 | 6): number {
  return BITS[family] - (size - 1n).toString(2).length;
}
