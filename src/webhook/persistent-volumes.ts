/**
 * X10 needs the PersistentVolume a claim names in `spec.volumeName` (docs/rules.md#x10): one GET of that
 * volume just before the decision, only for a claim that sets a volume name anew (static binding is rare;
 * every other review awaits nothing). No PersistentVolume informer: it would hold every volume of the
 * cluster in each replica for a check few requests need, and a GET reads the labels and claimRef as they
 * are now (ADR 0074).
 */
import type { PersistentVolumeLike } from '../validate/allow-lists.js';
import { volumeToRead } from '../validate/allow-admission.js';
import type { Decide } from './server.js';
import { ApiStatusError, type LeanApiClient } from '../kube/lean-client.js';

/** Reads a PersistentVolume by name: null when there is none; rejects when it cannot be read. */
export type ReadPersistentVolume = (name: string) => Promise<PersistentVolumeLike | null>;

/** `decide`, with the PersistentVolume a claim newly names read first (a failed read leaves it out: X10 refuses). */
export function readingPersistentVolumes(
  decide: Decide,
  read: ReadPersistentVolume,
  log: (message: string) => void = () => {},
): Decide {
  return (ctx, request, signal) => {
    const name = volumeToRead(
      request.operation,
      request.kind.group,
      request.kind.kind,
      request.subResource,
      request.object,
      request.oldObject,
    );
    if (name === undefined) return decide(ctx, request, signal);
    return read(name).then(
      (volume) => decide({ ...ctx, persistentVolumes: new Map([[name, volume]]) }, request, signal),
      (err: unknown) => {
        log(
          `PersistentVolume ${name} (named by PersistentVolumeClaim ${request.namespace ?? ''}/` +
            `${request.name ?? ''}) could not be read: ${err instanceof Error ? err.message : String(err)}`,
        );
        return decide({ ...ctx, persistentVolumes: new Map() }, request, signal);
      },
    );
  };
}

/** One GET /api/v1/persistentvolumes/{name} (RBAC: get persistentvolumes, ClusterRole tenantgate-webhook). */
export function persistentVolumeReader(api: Pick<LeanApiClient, 'call'>): ReadPersistentVolume {
  return async (name) => {
    try {
      return await api.call<PersistentVolumeLike>('GET', `/api/v1/persistentvolumes/${encodeURIComponent(name)}`);
    } catch (err) {
      if (err instanceof ApiStatusError && err.statusCode === 404) return null;
      throw err;
    }
  };
}
