/**
 * What a test file leaves on the shared control plane (test/support/global-setup.ts): the Projects, and
 * the namespaces labelled as a project's, that exist at its end and did not at its start. Files run one
 * at a time on that control plane and later ones rely on who owns what, so each file removes what it
 * creates; test/support/leftover-check.ts fails a file that does not.
 */
import * as k8s from '@kubernetes/client-node';
import { isNotFound, statusCode } from '../../src/kube/errors.js';
import { kubectl } from './cluster.js';
import { PROJECT_PLURAL, PROJECT_VERSION } from '../../src/kube/lists.js';
import { API_GROUP, LABEL_PROJECT } from '../../src/validate/types.js';
import { ANNOTATION_DELETION_CONFIRMED, BREAKER_CONFIGMAP } from '../../src/controller/deletion/names.js';
import { isTripped, parseBreaker } from '../../src/controller/deletion/breaker.js';

/** The Projects and the project namespaces of a cluster at one moment, by uid. */
export interface TenancyState {
  projects: Array<{ name: string; uid: string; deleting: boolean }>;
  namespaces: Array<{ name: string; uid: string; project: string; deleting: boolean }>;
}

/** What a file left: objects present at its end whose uid was not there at its start. */
export interface Leftovers {
  /** New Projects, whether or not their deletion began (one whose finalizer nobody removes stays for ever). */
  projects: string[];
  /** New namespaces labelled as a project's and not being deleted. */
  namespaces: string[];
}

/** Lists the Projects (none while the CRD is not installed) and the namespaces with the project label. */
export async function tenancyState(kc: k8s.KubeConfig): Promise<TenancyState> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  type Meta = { name?: string; uid?: string; deletionTimestamp?: unknown; labels?: Record<string, string> };
  let projectItems: Array<{ metadata?: Meta }> = [];
  // A CRD installed a moment ago answers 429 "storage is (re)initializing" for a while: retry it.
  for (let attempt = 1; ; attempt++) {
    try {
      projectItems = (
        (await custom.listClusterCustomObject({
          group: API_GROUP,
          version: PROJECT_VERSION,
          plural: PROJECT_PLURAL,
        })) as { items: Array<{ metadata?: Meta }> }
      ).items;
      break;
    } catch (err) {
      if (isNotFound(err)) break;
      if (statusCode(err) !== 429 || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 250 * attempt));
    }
  }
  const namespaceItems = (await core.listNamespace({ labelSelector: LABEL_PROJECT })).items;
  return {
    projects: projectItems.map((p) => ({
      name: p.metadata?.name ?? '',
      uid: p.metadata?.uid ?? '',
      deleting: p.metadata?.deletionTimestamp != null,
    })),
    namespaces: namespaceItems.map((n) => ({
      name: n.metadata?.name ?? '',
      uid: n.metadata?.uid ?? '',
      project: n.metadata?.labels?.[LABEL_PROJECT] ?? '',
      deleting: n.metadata?.deletionTimestamp != null,
    })),
  };
}

/**
 * What is in `after` and not in `before` (by uid: a Project deleted and created again under the same
 * name is new). A namespace being deleted is on its way out (kube-controller-manager finishes it) and
 * does not count; a Project being deleted does: its finalizer may never be removed.
 */
export function leftoversSince(before: TenancyState, after: TenancyState): Leftovers {
  const known = new Set([...before.projects.map((p) => p.uid), ...before.namespaces.map((n) => n.uid)]);
  return {
    projects: after.projects
      .filter((p) => !known.has(p.uid))
      .map((p) => (p.deleting ? `${p.name} (being deleted, finalizers left)` : p.name))
      .sort(),
    namespaces: after.namespaces
      .filter((n) => !known.has(n.uid) && !n.deleting)
      .map((n) => `${n.name} (project ${n.project})`)
      .sort(),
  };
}

export function noLeftovers(l: Leftovers): boolean {
  return l.projects.length === 0 && l.namespaces.length === 0;
}

/** The failure a file gets for what it left. */
export function leftoverMessage(file: string, l: Leftovers): string {
  const parts = [
    ...(l.projects.length > 0 ? [`Projects ${l.projects.join(', ')}`] : []),
    ...(l.namespaces.length > 0 ? [`project namespaces ${l.namespaces.join(', ')}`] : []),
  ];
  return `${file} left on the shared control plane: ${parts.join('; ')}. Later files rely on who owns what: delete them in the file's afterAll (a Project's namespaces go with it while the controller runs; without one, remove its finalizers and delete its namespaces too).`;
}

/** kubectl as a user on some control plane; the shared one unless a file runs its own. */
type KubectlAs = (user: string, args: string[]) => Promise<{ stdout: string }>;

/**
 * Confirms the deletion of these Projects (annotation tenantgate.io/deletion-confirmed: <uid>, as admin,
 * whom the policy D1 lets): their namespaces go with whatever they hold. Missing ones are skipped. `run`
 * is kubectl on the control plane the Projects live on (the shared one by default).
 */
export async function confirmDeletions(names: readonly string[], run: KubectlAs = kubectl): Promise<void> {
  if (names.length === 0) return;
  const listed = await run('admin', ['get', 'project', ...names, '--ignore-not-found', '-o', 'json']);
  if (!listed.stdout.trim()) return;
  const parsed = JSON.parse(listed.stdout) as { items?: Array<{ metadata: { name: string; uid: string } }> } & {
    metadata?: { name: string; uid: string };
  };
  const items = parsed.items ?? (parsed.metadata ? [{ metadata: parsed.metadata }] : []);
  for (const p of items)
    await run('admin', [
      'annotate',
      '--overwrite',
      'project',
      p.metadata.name,
      `${ANNOTATION_DELETION_CONFIRMED}=${p.metadata.uid}`,
    ]);
}

/** Resumes the deletion breaker of the shared control plane when it is tripped (kubectl tenantgate resume-deletions). */
export async function resumeDeletions(namespace = 'tenantgate-system'): Promise<boolean> {
  const got = await kubectl('admin', [
    '-n',
    namespace,
    'get',
    'configmap',
    BREAKER_CONFIGMAP,
    '--ignore-not-found',
    '-o',
    'json',
  ]);
  if (!got.stdout.trim()) return false;
  const data = (JSON.parse(got.stdout) as { data?: Record<string, string> }).data;
  if (!isTripped(parseBreaker(data))) return false;
  const patch = { data: { resumedAt: new Date().toISOString() } };
  await kubectl('admin', [
    '-n',
    namespace,
    'patch',
    'configmap',
    BREAKER_CONFIGMAP,
    '--type=merge',
    '-p',
    JSON.stringify(patch),
  ]);
  return true;
}

/**
 * Removes Projects a file created, and their namespaces, from the shared control plane: deletes them
 * and waits (at most `cascadeMs`) until they are gone — while the controller runs, its finalizer
 * deletes their namespaces first. A Project still there then (no controller to remove its finalizer)
 * has its finalizers removed. Finally every namespace still labelled as one of theirs and not being
 * deleted (a Project deleted without the controller leaves them) is deleted. For afterAll: call it
 * before stopping the controller, when there is one.
 */
export async function removeProjects(
  names: readonly string[],
  { cascadeMs = 60_000 }: { cascadeMs?: number } = {},
): Promise<void> {
  if (names.length === 0) return;
  const remaining = async () =>
    (await kubectl('admin', ['get', 'project', ...names, '--ignore-not-found', '-o', 'name'])).stdout
      .split('\n')
      .filter((l) => l.trim() !== '');
  // A cleanup deletes what the file made, data included: confirmed as a platform admin would (ADR 0096).
  await confirmDeletions(names);
  await kubectl('admin', ['delete', 'project', ...names, '--ignore-not-found', '--wait=false']);
  const deadline = Date.now() + cascadeMs;
  let left = await remaining();
  while (left.length > 0 && Date.now() < deadline) {
    // Many Projects at once trip the deletion breaker: resumed, as an operator would.
    await resumeDeletions();
    await new Promise((r) => setTimeout(r, 250));
    left = await remaining();
  }
  for (const project of left) {
    const patched = await kubectl(
      'admin',
      ['patch', project, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'],
      { reject: false },
    );
    if (patched.exitCode !== 0 && !/NotFound|not found/i.test(patched.stderr))
      throw new Error(`removing the finalizers of ${project} failed: ${patched.stderr}`);
  }
  const labelled = JSON.parse(
    (await kubectl('admin', ['get', 'namespace', '-l', `${LABEL_PROJECT} in (${names.join(',')})`, '-o', 'json']))
      .stdout,
  ) as { items: Array<{ metadata: { name: string; deletionTimestamp?: string } }> };
  const live = labelled.items.filter((n) => !n.metadata.deletionTimestamp).map((n) => n.metadata.name);
  if (live.length === 0) return;
  const deleted = await kubectl('admin', ['delete', 'namespace', ...live, '--ignore-not-found', '--wait=false'], {
    reject: false,
  });
  // A namespace whose deletion began meanwhile answers 409 ("ensuring all content is removed"): on its way out.
  if (deleted.exitCode !== 0 && !/ensuring all content is removed/.test(deleted.stderr))
    throw new Error(`deleting the namespaces ${live.join(', ')} failed: ${deleted.stderr}`);
}

/** The names of the Projects matching a label selector (a file's run label), for removeProjects. */
export async function projectsLabelled(selector: string): Promise<string[]> {
  const listed = await kubectl('admin', ['get', 'projects', '-l', selector, '-o', 'name'], { reject: false });
  if (listed.exitCode !== 0) return [];
  return listed.stdout
    .split('\n')
    .map((l) => l.trim().replace(/^project\.tenantgate\.io\//, ''))
    .filter((l) => l !== '');
}
