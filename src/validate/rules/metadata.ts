/**
 * T7: metadata that only privileged subjects may add, change or remove. On a project's namespaces: the
 * labels and annotations that grant power (granting-metadata.ts) and the configured ones, `metadata.finalizers`,
 * `metadata.ownerReferences` and any `spec.finalizers` entry but `kubernetes`. On the objects in a project namespace
 * that hold its budget and boundary (every ResourceQuota, and the LimitRange, NetworkPolicy and RoleBinding tenantgate
 * writes): `metadata.finalizers` and `metadata.ownerReferences`. A finalizer nobody removes stalls the
 * project's cascade; an owner reference with blockOwnerDeletion, pointing at another tenant's Project or
 * namespace, makes that owner's foreground deletion wait for an object the garbage collector may not
 * delete (Q3) or that never goes (a finalizer).
 */
import { LIMITRANGE_NAME, NETWORK_POLICY_NAME, OWNERS_BINDING_NAME } from '../managed-names.js';
import type { TenantgateConfig } from '../../config/config.js';
import { grantingKey, grantingPatterns, type MetadataField } from '../granting-metadata.js';
import { LABEL_PROJECT, LABEL_TENANT, type ObjectMeta, type Violation } from '../types.js';

/** The tenancy labels have their own rules (T2, T3) and clearer messages; T7 covers everything else. */
const TENANCY_LABELS = new Set([LABEL_PROJECT, LABEL_TENANT]);

interface NamespaceMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<Record<string, unknown>>;
}

/**
 * Whether a key is protected: an entry is an exact key, or a prefix when it ends in `*`. The patterns
 * are split once into exact keys and prefixes (T7 runs on every namespace request).
 */
const matchers = new WeakMap<readonly string[], (key: string) => boolean>();
function matcherOf(patterns: readonly string[]): (key: string) => boolean {
  let matcher = matchers.get(patterns);
  if (!matcher) {
    const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
    const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
    matcher = (key) => exact.has(key) || prefixes.some((prefix) => key.startsWith(prefix));
    matchers.set(patterns, matcher);
  }
  return matcher;
}

interface Change {
  key: string;
  before: string | undefined;
  after: string | undefined;
}

/** The protected keys whose value differs between before and after, sorted by key. */
function changedKeys(
  patterns: readonly string[],
  before: Record<string, string>,
  after: Record<string, string>,
  skip: (key: string, after: string | undefined) => boolean,
): Change[] {
  if (patterns.length === 0) return [];
  const isProtected = matcherOf(patterns);
  const changes: Change[] = [];
  const consider = (key: string) => {
    if (before[key] === after[key] || !isProtected(key) || skip(key, after[key])) return;
    changes.push({ key, before: before[key], after: after[key] });
  };
  for (const key in after) if (Object.hasOwn(after, key)) consider(key);
  // Removed keys: in before, not in after (kept ones were compared above).
  for (const key in before) if (Object.hasOwn(before, key) && !Object.hasOwn(after, key)) consider(key);
  return changes.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** A change of a key, with what the key grants when it is on the list (`… (null → "true") — DRA admin access: …`). */
function describeChange(field: MetadataField, c: Change): string {
  const grant = grantingKey(field, c.key);
  return (
    `${c.key} (${JSON.stringify(c.before ?? null)} → ${JSON.stringify(c.after ?? null)})` +
    `${grant ? ` — ${grant.grants}` : ''}`
  );
}

/**
 * The patterns T7 protects in a field: the granting keys, always, then the configured ones not already
 * among them. Memoised per configured list (T7 runs on every namespace request).
 */
const effective: Record<MetadataField, WeakMap<readonly string[], readonly string[]>> = {
  labels: new WeakMap(),
  annotations: new WeakMap(),
};
function protectedPatterns(field: MetadataField, configured: readonly string[]): readonly string[] {
  let patterns = effective[field].get(configured);
  if (!patterns) {
    const granting = grantingPatterns(field);
    patterns = [...granting, ...configured.filter((p) => !granting.includes(p))];
    effective[field].set(configured, patterns);
  }
  return patterns;
}

export interface ProtectedMetadataCheck {
  config: TenantgateConfig;
  /** e.g. `Namespace payments-dev (project payments, tenant acme)` */
  subject: string;
  /** e.g. `user "alice"` */
  who: string;
  before: NamespaceMetadata;
  after: NamespaceMetadata;
  /** Annotations whose new value tenantgate itself sets (the project-uid on CREATE), keyed to that value. */
  expectedAnnotations?: Record<string, string>;
  /** Labels whose new value tenantgate itself sets (the Pod Security levels on CREATE), keyed to that value. */
  expectedLabels?: Record<string, string>;
}

/** A list field of the metadata as JSON (absent and empty are the same), for comparison and messages. */
function listText(list: unknown[] | undefined): string {
  return JSON.stringify(list ?? []);
}

type ListField = 'finalizers' | 'ownerReferences';

/** The lists among metadata.finalizers and metadata.ownerReferences that differ, with both values as JSON. */
function changedLists(
  before: Pick<NamespaceMetadata, ListField>,
  after: Pick<NamespaceMetadata, ListField>,
): Array<{ field: ListField; before: string; after: string }> {
  const out: Array<{ field: ListField; before: string; after: string }> = [];
  for (const field of ['finalizers', 'ownerReferences'] as const) {
    const b = listText(before[field]);
    const a = listText(after[field]);
    if (b !== a) out.push({ field, before: b, after: a });
  }
  return out;
}

/** What T7 guards in a project namespace besides the Namespace itself, as its messages name it. */
const PROTECTED_OBJECTS_TEXT =
  `every ResourceQuota, LimitRange ${LIMITRANGE_NAME}, NetworkPolicy ${NETWORK_POLICY_NAME} and RoleBinding ` +
  `${OWNERS_BINDING_NAME}`;

export interface ProtectedObjectMetadataCheck {
  /** e.g. `ResourceQuota payments-dev/tenantgate-quota (project payments, tenant acme)` */
  subject: string;
  /** e.g. `user "alice"` */
  who: string;
  /** The stored object's metadata; {} on CREATE. */
  before: Pick<ObjectMeta, ListField>;
  after: Pick<ObjectMeta, ListField>;
}

/**
 * T7 for a non-privileged subject on an object in a project namespace that holds the project's budget
 * or boundary (a ResourceQuota, or a LimitRange, NetworkPolicy or RoleBinding tenantgate manages):
 * every change to its finalizers or owner references, on CREATE as on UPDATE.
 */
export function checkProtectedObjectMetadata(check: ProtectedObjectMetadataCheck): Violation[] {
  const lists = changedLists(check.before, check.after);
  if (lists.length === 0) return [];
  const parts = lists.map((l) => `metadata.${l.field} (${l.before} → ${l.after})`);
  return [
    {
      rule: 'T7',
      path: ['metadata', lists[0]!.field],
      message:
        `${check.subject}: ${check.who} may not add, change or remove ${parts.join(' and ')}; in a project ` +
        `namespace only privileged subjects set metadata.finalizers and metadata.ownerReferences of ` +
        `${PROTECTED_OBJECTS_TEXT} (allowed: leave both as they are; ask the platform team)`,
    },
  ];
}

/**
 * The one entry of a Namespace's spec.finalizers that the apiserver adds itself and the namespace controller removes.
 */
const NAMESPACE_FINALIZER = 'kubernetes';

/**
 * T7 on a namespace CREATE by a non-privileged subject: `spec.finalizers` holds nothing but
 * `kubernetes`. Any other entry keeps the namespace Terminating for ever once deleted (the namespace
 * controller removes only its own; the rest needs a write to namespaces/finalize, T8), and with it the
 * project's cascade. The apiserver keeps spec.finalizers on UPDATE, so CREATE is the only way in.
 */
export function checkNamespaceSpecFinalizers(
  subject: string,
  who: string,
  finalizers: readonly string[] | undefined,
): Violation[] {
  const extra = (finalizers ?? []).filter((f) => f !== NAMESPACE_FINALIZER);
  if (extra.length === 0) return [];
  return [
    {
      rule: 'T7',
      path: ['spec', 'finalizers'],
      message:
        `${subject}: ${who} may not set spec.finalizers ${extra.map((f) => JSON.stringify(f)).join(', ')} (has ` +
        `${JSON.stringify(finalizers)}); allowed: none or ${JSON.stringify(NAMESPACE_FINALIZER)}, which the ` +
        `apiserver adds itself; only privileged subjects create namespaces with other finalizers`,
    },
  ];
}

/** T7 for a non-privileged subject: every protected key it adds, changes or removes. */
export function checkProtectedMetadata(check: ProtectedMetadataCheck): Violation[] {
  const configured = check.config.protectedNamespaceMetadata;
  const labelPatterns = protectedPatterns('labels', configured.labels);
  const annotationPatterns = protectedPatterns('annotations', configured.annotations);
  const expectedLabels = check.expectedLabels ?? {};
  const labels = changedKeys(
    labelPatterns,
    check.before.labels ?? {},
    check.after.labels ?? {},
    (key, after) => TENANCY_LABELS.has(key) || (after !== undefined && expectedLabels[key] === after),
  );
  const expected = check.expectedAnnotations ?? {};
  const annotations = changedKeys(
    annotationPatterns,
    check.before.annotations ?? {},
    check.after.annotations ?? {},
    (key, after) => after !== undefined && expected[key] === after,
  );
  const lists = changedLists(check.before, check.after);
  if (labels.length === 0 && annotations.length === 0 && lists.length === 0) return [];
  const parts: string[] = [];
  if (labels.length) parts.push(`labels ${labels.map((c) => describeChange('labels', c)).join(', ')}`);
  if (annotations.length)
    parts.push(`annotations ${annotations.map((c) => describeChange('annotations', c)).join(', ')}`);
  for (const l of lists) parts.push(`metadata.${l.field} (${l.before} → ${l.after})`);
  const allowed = [
    labelPatterns.length ? `labels ${labelPatterns.join(', ')}` : '',
    annotationPatterns.length ? `annotations ${annotationPatterns.join(', ')}` : '',
    'metadata.finalizers and metadata.ownerReferences',
  ].filter(Boolean);
  return [
    {
      rule: 'T7',
      path: ['metadata', labels.length ? 'labels' : annotations.length ? 'annotations' : lists[0]!.field],
      message:
        `${check.subject}: ${check.who} may not add, change or remove the protected ${parts.join(' and ')}; only ` +
        `privileged subjects set ${allowed.join(', ')} on namespaces (allowed: leave them as they are; ask the ` +
        `platform team)`,
    },
  ];
}

/**
 * T7 offline, on a Project's declaration: no declared namespace carries a label or annotation that
 * grants power. Render would emit it and the privileged identity that syncs Projects would apply it, so
 * a grant would reach a tenant's namespace through its Project; a privileged subject sets one on the
 * namespace itself instead (the Pod Security levels: spec.podSecurity).
 */
export function checkDeclaredGrantingMetadata(
  project: string,
  namespace: string,
  index: number,
  declared: { labels?: Record<string, string>; annotations?: Record<string, string> },
): Violation[] {
  const out: Violation[] = [];
  for (const field of ['labels', 'annotations'] as const) {
    const map = declared[field];
    if (!map || typeof map !== 'object') continue;
    for (const key of Object.keys(map).sort()) {
      const grant = grantingKey(field, key);
      if (!grant) continue;
      const instead = grant.instead ? `; for this use ${grant.instead}` : '';
      out.push({
        rule: 'T7',
        path: ['spec', 'namespaces', index, field, key],
        message:
          `Project ${project} declares namespace ${namespace} with the ` +
          `${field === 'labels' ? 'label' : 'annotation'} ${key}=${JSON.stringify(map[key])} (${grant.grants}); a ` +
          `Project may not declare labels or annotations that grant power (allowed: leave it out; a privileged ` +
          `subject sets it on the namespace itself, docs/rules.md T7${instead})`,
      });
    }
  }
  return out;
}

/**
 * Whether an update changes nothing but metadata.finalizers and metadata.ownerReferences, and only
 * removes entries: the garbage collector dropping the foregroundDeletion or orphan finalizer, or an
 * owner reference whose owner is gone. Kubernetes' controllers never need to add one; adding is how a
 * finalizer stalls a cascade or an owner reference stalls another tenant's deletion, so an addition is
 * judged as for anyone else.
 */
export function onlyDropsFinalizersOrOwners(
  after: { metadata: ObjectMeta; spec?: unknown },
  before: { metadata: ObjectMeta; spec?: unknown },
): boolean {
  const rest = (o: { metadata: ObjectMeta; spec?: unknown }) =>
    JSON.stringify([o.metadata.labels ?? {}, o.metadata.annotations ?? {}, o.spec ?? null]);
  return (
    rest(after) === rest(before) &&
    dropsOnly(after.metadata.finalizers, before.metadata.finalizers, (f) => f) &&
    dropsOnly(after.metadata.ownerReferences, before.metadata.ownerReferences, (r) => JSON.stringify(r))
  );
}

function dropsOnly<T>(
  after: readonly T[] | undefined,
  before: readonly T[] | undefined,
  key: (item: T) => string,
): boolean {
  const had = new Set((before ?? []).map(key));
  return (after ?? []).every((item) => had.has(key(item)));
}
