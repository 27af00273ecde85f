/**
 * Address arithmetic for the CIDRs rules and configuration name: parse an address or CIDR, test
 * containment, and the canonical form Kubernetes 1.36+ stores. Pure, no imports.
 */
/** An address as a bit string (32 or 128 bits), or undefined when it is not an IPv4 or IPv6 address. */
function addressBits(address: string): { family: 4 | 6; bits: bigint } | undefined {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) {
    const parts = address.split('.').map(Number);
    if (parts.some((p) => p > 255)) return undefined;
    return { family: 4, bits: parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n) };
  }
  if (!/^[0-9a-fA-F:]+$/.test(address) || !address.includes(':')) return undefined;
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0] ?? '');
  const tail = halves.length === 2 ? groups(halves[1] ?? '') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (all.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  return { family: 6, bits: all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
}

export interface Cidr {
  family: 4 | 6;
  bits: bigint;
  prefix: number;
}

/** A CIDR (`203.0.113.0/24`, `2001:db8::/64`), or undefined when it is not one. A bare address is a /32 or /128. */
export function parseCidr(text: string): Cidr | undefined {
  const [address = '', prefixText, extra] = text.split('/');
  if (extra !== undefined) return undefined;
  const parsed = addressBits(address);
  if (!parsed) return undefined;
  const width = parsed.family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? width : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= width)) return undefined;
  return { family: parsed.family, bits: parsed.bits, prefix };
}

/**
 * The CIDR in the form Kubernetes 1.36+ stores (StrictIPCIDRValidation): the network address with its
 * host bits zero, IPv4 without leading zeros, IPv6 compressed as RFC 5952 says (the URL host serializer
 * writes it so), and the prefix length.
 */
export function canonicalCidr(c: Cidr): string {
  const width = c.family === 4 ? 32 : 128;
  const hostBits = BigInt(width - c.prefix);
  const network = (c.bits >> hostBits) << hostBits;
  if (c.family === 4) return `${[24n, 16n, 8n, 0n].map((shift) => (network >> shift) & 255n).join('.')}/${c.prefix}`;
  const groups = Array.from({ length: 8 }, (_, i) => ((network >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return `${new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)}/${c.prefix}`;
}

/** Why `text` is not a CIDR in canonical form (undefined: it is one), with the form to write. */
export function cidrProblem(text: string): string | undefined {
  const parsed = text.includes('/') ? parseCidr(text) : undefined;
  if (!parsed) return 'is not a CIDR (an address, "/", a prefix length: 203.0.113.0/24, 2001:db8::/64)';
  const canonical = canonicalCidr(parsed);
  return canonical === text
    ? undefined
    : `is not in canonical form (host bits zero, no leading zeros, IPv6 compressed and lowercase; Kubernetes 1.36+ ` +
        `refuses other forms in a NetworkPolicy): write ${JSON.stringify(canonical)}`;
}

/** Whether `inner` (an address or a CIDR) lies inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefix < outer.prefix) return false;
  const width = BigInt(outer.family === 4 ? 32 : 128);
  const shift = width - BigInt(outer.prefix);
  return outer.bits >> shift === inner.bits >> shift;
}

/**
 * Whether `text` is a bare address as Kubernetes' CEL `isIP` reads one (Go's netip): no prefix length and no
 * IPv4 part with a leading zero.
 */
function isStrictAddress(text: string): boolean {
  if (text.includes('/') || addressBits(text) === undefined) return false;
  return !text.includes('.') || text.split('.').every((part) => !/^0\d/.test(part));
}

/**
 * Whether `text` is a bare address (isStrictAddress) inside one of `allowed`: what a field holding one address may be.
 */
export function addressWithinAnyCidr(text: string, allowed: readonly string[]): boolean {
  return isStrictAddress(text) && withinAnyCidr(text, allowed);
}

/** Whether `text` (an address or CIDR) lies inside one of `allowed` (CIDR texts; unparsable ones admit nothing). */
export function withinAnyCidr(text: string, allowed: readonly string[]): boolean {
  const inner = parseCidr(text);
  if (!inner) return false;
  return allowed.some((a) => {
    const outer = parseCidr(a);
    return outer !== undefined && cidrContains(outer, inner);
  });
}
