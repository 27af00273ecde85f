/** Orders for output that must not depend on the machine's locale (status, render, the view, the plugin). */

/** Code-unit order of strings, as Go's sort.Strings: deterministic and locale-independent. */
export function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Kubernetes objects by metadata.name (a missing name sorts as ''). */
export function byMetadataName(a: { metadata: { name?: string } }, b: { metadata: { name?: string } }): number {
  return cmpStr(a.metadata.name ?? '', b.metadata.name ?? '');
}
