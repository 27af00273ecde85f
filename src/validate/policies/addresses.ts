/** X2 in CEL: an address a tenant claims lies inside one of the AllowList's externalIPs CIDRs. */

/** `ip` is an IP address inside an allowed CIDR. */
export const withinExternalIPs = (ip: string): string =>
  `(isIP(${ip}) && params.spec.services.externalIPs.exists(c, isCIDR(c) && cidr(c).containsIP(${ip})))`;

export const ALLOWED_ADDRESSES =
  "(params.spec.services.externalIPs.size() > 0 ? 'addresses in ' + params.spec.services.externalIPs.join(', ') : " +
  "'no address')";
