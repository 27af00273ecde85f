/** Key order that does not depend on how an object was built: for comparing and for stable output. */

/** The record with its keys in code-unit order (deterministic, locale-independent). */
export function sortedKeys<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const key of Object.keys(record).sort()) out[key] = record[key]!;
  return out;
}

/** JSON with every object's keys sorted (arrays keep their order): equal values give equal strings. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? sortedKeys(v as Record<string, unknown>) : v,
  );
}
