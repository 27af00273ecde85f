/**
 * The one change of a Project T5 leaves to the API server: setting, changing or removing the
 * annotation `tenantgate.io/deletion-confirmed` and nothing else. Who may set it is D1's, decided by
 * the ValidatingAdmissionPolicy tenantgate-deletion-confirmation (the verb confirm-deletion on that
 * Project, docs/adr/0096-deletion-loses-no-data.md): a platform admin bound to
 * tenantgate-deletion-confirmer need not also be a privileged subject of tenantgate.yaml. Pure.
 */
import type { Project } from '../types.js';

const CONFIRMATION = 'tenantgate.io/deletion-confirmed';

/**
 * Everything of a Project's update but that annotation (status is a subresource, resourceVersion and
 * managedFields are the server's).
 */
function withoutConfirmation(p: Project): string {
  const { annotations, ...metadata } = (p.metadata ?? {}) as Project['metadata'] & Record<string, unknown>;
  const { [CONFIRMATION]: _confirmation, ...otherAnnotations } = annotations ?? {};
  void _confirmation;
  const kept: Record<string, unknown> = { ...metadata };
  for (const key of ['resourceVersion', 'managedFields', 'generation', 'creationTimestamp', 'uid']) delete kept[key];
  return canonical({ metadata: { ...kept, annotations: otherAnnotations }, spec: p.spec });
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

/** True when an UPDATE changes the confirmation annotation and nothing else of the Project. */
export function onlyChangesDeletionConfirmation(object: Project, oldObject: Project): boolean {
  const now = object.metadata?.annotations?.[CONFIRMATION];
  const was = oldObject.metadata?.annotations?.[CONFIRMATION];
  return now !== was && withoutConfirmation(object) === withoutConfirmation(oldObject);
}
