/**
 * What a narrowed allow-list strands (docs/rules.md#allow-lists): the running objects of a project's
 * namespaces that its lists admit before the change and refuse after it. The webhook leaves them
 * running (an update is refused only for what it adds), but they could not be created again: a
 * Deployment's next pod, a re-created Service. Pure.
 */
import type { TenantgateConfig } from '../config/config.js';
import { allowListKindOf, allowListViolations } from '../validate/allow-admission.js';
import { allowSubject } from '../validate/rules/allow-lists.js';
import type { Project, Violation } from '../validate/types.js';
import type { PlanFinding } from './types.js';

/** An object as listed from the cluster (apiVersion and kind set, metadata.namespace and name). */
export type LiveObject = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
};

/**
 * A violation as compared across the change: its rule and field, not its message, whose "allowed:" part
 * names the lists and so differs between the old lists and the new ones for the same refusal.
 */
const sameFinding = (v: Violation): string => `${v.rule} ${JSON.stringify(v.path ?? [])}`;

const groupOf = (apiVersion: string | undefined): string =>
  apiVersion?.includes('/') ? apiVersion.split('/')[0]! : '';

/** Findings for every object in `namespaces` that `will`'s lists refuse and `was`'s admitted. */
export function strandedByAllowLists(
  config: TenantgateConfig,
  was: Project,
  will: Project,
  namespaces: ReadonlySet<string>,
  objects: readonly LiveObject[],
): PlanFinding[] {
  const out: PlanFinding[] = [];
  for (const object of objects) {
    const kind = allowListKindOf(groupOf(object.apiVersion), object.kind ?? '');
    const namespace = object.metadata?.namespace ?? '';
    if (!kind || !namespaces.has(namespace)) continue;
    const name = object.metadata?.name ?? '';
    const refusedBefore = allowListViolations(allowSubject(config, was, kind, namespace, name), kind, object);
    const before = new Set(refusedBefore.map(sameFinding));
    for (const v of allowListViolations(allowSubject(config, will, kind, namespace, name), kind, object)) {
      if (before.has(sameFinding(v))) continue;
      out.push({
        rule: v.rule,
        message: `${v.message} (it runs now: it keeps running, but could not be created again)`,
        object: `${kind} ${namespace}/${name}`,
        by: 'plan',
      });
    }
  }
  return out;
}
