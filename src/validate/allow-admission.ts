/**
 * Admission of the objects the allow-lists judge (X1–X10, H1, H2, H4, docs/rules.md#allow-lists): which kinds, which
 * project, which rules. Lookups in the snapshot only. What each rule judges, and that an UPDATE is judged only
 * for what it adds: docs/adr/0095-allow-lists-in-the-api-server.md.
 */
import { volumeOwnership } from './allow-lists.js';
import type { Operation, ReviewContext, Verdict } from './admission.js';
import {
  allowSubject,
  checkGateway,
  checkIngress,
  checkListenerSet,
  checkPersistentVolumeClaim,
  checkPod,
  checkPortRoute,
  checkResourceClaim,
  checkRoute,
  checkService,
  type AllowSubject,
} from './rules/allow-lists.js';
import { volumeNameNotKnownYet } from './rules/volume-binding.js';
import { LABEL_PROJECT, type Violation } from './types.js';

/** `group/kind` of each kind the allow-lists judge, to the kind its messages name. */
const ALLOW_LIST_KINDS = {
  '/Pod': 'Pod',
  '/Service': 'Service',
  '/PersistentVolumeClaim': 'PersistentVolumeClaim',
  'networking.k8s.io/Ingress': 'Ingress',
  'gateway.networking.k8s.io/HTTPRoute': 'HTTPRoute',
  'gateway.networking.k8s.io/GRPCRoute': 'GRPCRoute',
  'gateway.networking.k8s.io/TLSRoute': 'TLSRoute',
  'gateway.networking.k8s.io/TCPRoute': 'TCPRoute',
  'gateway.networking.k8s.io/UDPRoute': 'UDPRoute',
  'gateway.networking.k8s.io/Gateway': 'Gateway',
  'gateway.networking.k8s.io/ListenerSet': 'ListenerSet',
  'gateway.networking.x-k8s.io/XListenerSet': 'XListenerSet',
  'resource.k8s.io/ResourceClaim': 'ResourceClaim',
  'resource.k8s.io/ResourceClaimTemplate': 'ResourceClaimTemplate',
} as const;

export type AllowListKind = (typeof ALLOW_LIST_KINDS)[keyof typeof ALLOW_LIST_KINDS];

/** The kind when the allow-lists judge objects of this API group (`''` for core) and kind. */
export function allowListKindOf(group: string, kind: string): AllowListKind | undefined {
  return (ALLOW_LIST_KINDS as Record<string, AllowListKind | undefined>)[`${group}/${kind}`];
}

type Json = Record<string, unknown>;

/** The rules that judge each kind (the routes of one shape share theirs). */
const CHECKS: Record<AllowListKind, (s: AllowSubject, object: Json, old?: Json) => Violation[]> = {
  Pod: checkPod,
  Service: checkService,
  PersistentVolumeClaim: checkPersistentVolumeClaim,
  Ingress: checkIngress,
  HTTPRoute: checkRoute,
  GRPCRoute: checkRoute,
  TLSRoute: checkRoute,
  TCPRoute: checkPortRoute,
  UDPRoute: checkPortRoute,
  Gateway: checkGateway,
  ListenerSet: checkListenerSet,
  XListenerSet: checkListenerSet,
  ResourceClaim: (s, object, old) => checkResourceClaim(s, object, false, old),
  ResourceClaimTemplate: (s, object, old) => checkResourceClaim(s, object, true, old),
};

/**
 * Every allow-list violation of `object` (a `kind` of the project `s` names). `old` is the old object of an
 * UPDATE, undefined on CREATE: then only what the update adds is judged (docs/adr/0095).
 */
export function allowListViolations(s: AllowSubject, kind: AllowListKind, object: Json, old?: Json): Violation[] {
  return CHECKS[kind](s, object, old);
}

const NOTHING: Verdict = { violations: [], warnings: [] };

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const volumeNameOf = (claim: Json | undefined | null): string | undefined => {
  const spec = claim?.spec;
  return isObject(spec) && typeof spec.volumeName === 'string' && spec.volumeName !== '' ? spec.volumeName : undefined;
};

/**
 * The PersistentVolume X10 needs read before a decision: the `spec.volumeName` a claim's create sets,
 * or an update sets anew. An update keeping its volume name needs none (nothing new to judge).
 */
export function volumeToRead(
  operation: Operation,
  group: string,
  kind: string,
  subResource: string | undefined,
  object: Json | undefined | null,
  old: Json | undefined | null,
): string | undefined {
  if (
    group !== '' ||
    kind !== 'PersistentVolumeClaim' ||
    subResource ||
    (operation !== 'CREATE' && operation !== 'UPDATE')
  )
    return undefined;
  const name = volumeNameOf(object);
  if (!name || (operation === 'UPDATE' && volumeNameOf(old) === name)) return undefined;
  return name;
}

/**
 * A create or update of one of the judged kinds in a namespace. Every subject is judged; outside
 * projects and on DELETE nothing is. An update is refused only for what it adds: an object
 * admitted before a list was narrowed can still be labelled, scaled or finalised (`tenantgate plan`
 * lists it instead).
 */
export function reviewAllowLists(
  ctx: ReviewContext,
  operation: Operation,
  kind: AllowListKind,
  namespace: string,
  object: Json | undefined,
  old: Json | undefined,
): Verdict {
  if ((operation !== 'CREATE' && operation !== 'UPDATE') || !object || !namespace) return NOTHING;
  const metadata = (object.metadata ?? {}) as { name?: string; generateName?: string };
  const name = metadata.name || (metadata.generateName ? `${metadata.generateName}*` : '');
  const volume =
    kind === 'PersistentVolumeClaim' ? volumeToRead(operation, '', kind, undefined, object, old) : undefined;
  // X10 on a new volumeName fails closed while the cache lacks the namespace or its project.
  const notKnown = (what: string): Verdict =>
    volume === undefined
      ? NOTHING
      : { violations: [volumeNameNotKnownYet(namespace, name, volume, what)], warnings: [] };
  const nsObject = ctx.snapshot.namespace(namespace);
  if (!nsObject) return notKnown(`namespace ${namespace}`);
  const projectName = nsObject.metadata.labels?.[LABEL_PROJECT];
  if (!projectName) return NOTHING;
  const project = ctx.snapshot.project(projectName);
  if (!project) return notKnown(`project ${projectName}`);
  const subject = allowSubject(ctx.config, project, kind, namespace, name);
  if (volume !== undefined) {
    subject.volume = volumeOwnership(
      volume,
      ctx.persistentVolumes?.get(volume),
      (ns) => ctx.snapshot.namespace(ns)?.metadata.labels?.[LABEL_PROJECT],
    );
  }
  return {
    violations: allowListViolations(subject, kind, object, operation === 'UPDATE' ? old : undefined),
    warnings: [],
  };
}
