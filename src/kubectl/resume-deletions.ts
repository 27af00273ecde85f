/**
 * `kubectl tenantgate resume-deletions`, run by an operator (whoever may update the ConfigMap
 * tenantgate-deletion-breaker in tenantgate's namespace): the deletion breaker (rule D2,
 * docs/adr/0096-deletion-loses-no-data.md, docs/deletion.md) lets the cascades go on. It writes
 * `resumedAt` with a replace at the resourceVersion it read (the controller may trip it meanwhile: read
 * again, at most MAX_ATTEMPTS times). The Projects whose deletion began before go on; later ones are counted afresh.
 */
import { breakerData, isTripped, parseBreaker, type BreakerState } from '../controller/deletion/breaker.js';
import { BREAKER_CONFIGMAP } from '../controller/deletion/names.js';
import { KubectlError, type Kubectl } from './kubectl.js';

const MAX_ATTEMPTS = 5;

export interface ResumeOutcome {
  /** False when the breaker was not tripped (nothing written). */
  resumed: boolean;
  /** What the breaker had recorded. */
  state: BreakerState;
}

interface ConfigMapObject {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string; resourceVersion?: string; [k: string]: unknown };
  data?: Record<string, string>;
}

export async function resumeDeletions(
  kubectl: Kubectl,
  namespace: string,
  now: () => Date = () => new Date(),
): Promise<ResumeOutcome> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let stored: ConfigMapObject;
    try {
      stored = await kubectl.json<ConfigMapObject>(['get', 'configmap', BREAKER_CONFIGMAP, '-n', namespace]);
    } catch (err) {
      if (err instanceof KubectlError && err.notFound) return { resumed: false, state: {} };
      throw err;
    }
    const state = parseBreaker(stored.data);
    if (!isTripped(state)) return { resumed: false, state };
    const data = { ...stored.data, ...breakerData({ ...state, resumedAt: now().getTime() }) };
    const args = ['replace', '-o', 'name', '-f', '-'];
    const run = await kubectl.run(args, { input: JSON.stringify({ ...stored, data }) });
    if (run.exitCode === 0) return { resumed: true, state };
    if (!/\(Conflict\)|the object has been modified/i.test(run.stderr)) throw new KubectlError(args, run);
  }
  throw new Error(`ConfigMap ${namespace}/${BREAKER_CONFIGMAP} changed ${MAX_ATTEMPTS} times while being written`);
}

export function resumeText(namespace: string, outcome: ResumeOutcome): string {
  const s = outcome.state;
  if (!outcome.resumed)
    return `the deletion breaker (ConfigMap ${namespace}/${BREAKER_CONFIGMAP}) is not tripped: nothing to resume\n`;
  const who = s.projects?.length ? `: ${s.projects.join(', ')}` : '';
  return (
    `the deletion breaker resumed (it tripped at ${new Date(s.trippedAt ?? 0).toISOString()}: ${s.reason ?? ''}).\n` +
    `The deletions that began before go on${who}; each still waits for a confirmation where its namespaces hold data ` +
    '(docs/deletion.md).\n'
  );
}
