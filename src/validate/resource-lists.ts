/** Resource lists as the rules count them: parsing (cached by list identity), formatting and exact arithmetic. */
import { Quantity } from '../quantity/quantity.js';
import type { FieldPath, ResourceList, Resources, Violation } from './types.js';

/**
 * Parsed lists of cached objects, by list identity: objects from the watch caches are replaced, never
 * edited, so a list parses once however many decisions read it. The result is read-only (`Resources` is a ReadonlyMap).
 */
const parsedLists = new WeakMap<ResourceList, Resources>();

/**
 * Parses a ResourceList; unparsable entries become S1 violations (when a sink is given) and are left out.
 * `path` and `owner` default as parseUncached's.
 */
export function parseResources(
  list: ResourceList | undefined,
  path?: FieldPath,
  sink?: Violation[],
  owner?: string,
): Resources {
  if (!sink && list) {
    let cached = parsedLists.get(list);
    if (!cached) parsedLists.set(list, (cached = parseUncached(list, path, [], owner)));
    return cached;
  }
  return parseUncached(list, path, sink, owner);
}

/**
 * parseResources without the cache, for a list that lives no longer than one decision (the object
 * under review): caching it would only add a WeakMap entry that dies young, and a WeakMap whose
 * entries come and go is rebuilt from time to time, in the young generation.
 */
export function parseUncached(
  list: ResourceList | undefined,
  path: FieldPath = [],
  sink?: Violation[],
  owner = 'object',
): Resources {
  const out = new Map<string, Quantity>();
  if (!list) return out;
  for (const name of Object.keys(list)) {
    const raw = list[name];
    const q = Quantity.tryParse(raw);
    if (q === undefined) {
      sink?.push({
        rule: 'S1',
        path: [...path, name],
        message:
          `${owner}: ${[...path, name].join('.')} is ${JSON.stringify(raw)}, which is not a Kubernetes quantity ` +
          `(allowed: e.g. 500m, 2, 1.5Gi, 1e3)`,
      });
      continue;
    }
    out.set(name, q);
  }
  return out;
}

export function formatResources(resources: Resources): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [...resources.keys()].sort()) out[name] = resources.get(name)!.toString();
  return out;
}

/** Σ of the lists, resource by resource, added in their order. */
export function sumResources(lists: Iterable<Resources>): Resources {
  const total = new Map<string, Quantity>();
  for (const list of lists) for (const [r, v] of list) total.set(r, total.has(r) ? total.get(r)!.add(v) : v);
  return total;
}

export function maxResources(a: Resources, b: Resources): Resources {
  const out = new Map<string, Quantity>(a);
  for (const [name, q] of b) {
    const prev = out.get(name);
    if (!prev || q.cmp(prev) > 0) out.set(name, q);
  }
  return out;
}
