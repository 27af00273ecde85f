/**
 * A namespace Argo CD just created is Argo CD's to fill (docs/argocd.md, "The controller and the first
 * sync"; docs/adr/0008-argocd.md). `tenantgate render` emits, for every namespace a Project
 * declares, its ResourceQuota, LimitRange, NetworkPolicy, owners' RoleBinding and AllowList; Argo CD applies them
 * a moment after the Namespace, in the same sync. If the controller created them in that moment, Argo
 * CD's create (client-side apply) failed with "already exists" and the sync with it. So the controller
 * leaves an Argo CD-tracked namespace alone for a grace period after its creation, then creates
 * whatever is still missing (the same objects: nothing is left unguarded for longer than the grace).
 * Pure.
 */
import type { NamespaceObject } from '../validate/types.js';

/** Argo CD's annotation tracking (its default since 3.0). */
const ARGOCD_TRACKING_ANNOTATION = 'argocd.argoproj.io/tracking-id';
/** Argo CD's label tracking (the default before 3.0). */
const ARGOCD_INSTANCE_LABEL = 'app.kubernetes.io/instance';
/** How long after its creation an Argo CD-tracked namespace is left to its sync. */
export const ARGOCD_SYNC_GRACE_MS = 60_000;

/** Milliseconds left of the grace for namespace `ns` at `at`: 0 when it is not Argo CD's, or no longer new. */
export function argoCdGraceLeft(ns: NamespaceObject, at: number, graceMs: number = ARGOCD_SYNC_GRACE_MS): number {
  const tracked =
    ns.metadata.annotations?.[ARGOCD_TRACKING_ANNOTATION] !== undefined ||
    ns.metadata.labels?.[ARGOCD_INSTANCE_LABEL] !== undefined;
  const created = ns.metadata.creationTimestamp ? Date.parse(ns.metadata.creationTimestamp) : NaN;
  if (!tracked || Number.isNaN(created)) return 0;
  return Math.max(0, created + graceMs - at);
}
