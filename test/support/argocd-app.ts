/**
 * Argo CD Applications in the e2e tests, driven through their objects (no argocd-server): create,
 * hard refresh (annotation), sync (the `operation` field, as Argo CD's e2e suite does), read, delete.
 */
import { applicationObject, ARGOCD_NAMESPACE, type AppOptions } from './argocd.js';
export { applicationObject, type AppOptions };
import { eventually, kubectl } from './cluster.js';

export interface AppResource {
  group?: string;
  kind: string;
  name: string;
  namespace?: string;
  status?: string;
  health?: { status?: string; message?: string };
}

export interface SyncResultResource extends AppResource {
  message?: string;
  syncPhase?: string;
  hookPhase?: string;
}

export interface Application {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
  operation?: unknown;
  status?: {
    sync?: { status?: string; revision?: string };
    health?: { status?: string; message?: string };
    conditions?: Array<{ type: string; message: string }>;
    reconciledAt?: string;
    resources?: AppResource[];
    operationState?: {
      phase?: string;
      message?: string;
      operation?: { sync?: { revision?: string } };
      syncResult?: { revision?: string; resources?: SyncResultResource[] };
    };
  };
}

export async function createApplication(o: AppOptions): Promise<void> {
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(applicationObject(o)) });
}

export async function getApplication(name: string): Promise<Application> {
  return JSON.parse(
    (await kubectl('admin', ['-n', ARGOCD_NAMESPACE, 'get', 'application', name, '-o', 'json'])).stdout,
  ) as Application;
}

/** Sets one annotation (`key=value`) on an Application, as admin. */
export async function annotateApplication(name: string, annotation: string): Promise<void> {
  await kubectl('admin', ['-n', ARGOCD_NAMESPACE, 'annotate', '--overwrite', 'application', name, annotation]);
}

/** Asks the controller to re-render from git now (the annotation is removed once done). */
export async function refreshHard(name: string): Promise<void> {
  await annotateApplication(name, 'argocd.argoproj.io/refresh=hard');
}

/** Starts a sync of `revision` by writing the Application's operation; prune deletes what git no longer has. */
export async function startSync(name: string, revision: string, options: { prune?: boolean } = {}): Promise<void> {
  const operation = { initiatedBy: { username: 'tenantgate-e2e' }, sync: { revision, prune: options.prune ?? false } };
  await kubectl('admin', [
    '-n',
    ARGOCD_NAMESPACE,
    'patch',
    'application',
    name,
    '--type=merge',
    '-p',
    JSON.stringify({ operation }),
  ]);
}

/** Polls the Application until `check` returns a value (or throws a descriptive error until then). */
export async function waitForApp<T>(
  name: string,
  what: string,
  check: (app: Application) => T | undefined,
  timeoutMs = 180_000,
): Promise<T> {
  let last: Application | undefined;
  try {
    return await eventually(
      async () => {
        last = await getApplication(name);
        const value = check(last);
        if (value === undefined || value === false) throw new Error('not yet');
        return value;
      },
      { timeoutMs, intervalMs: 500, what: `Application ${name}: ${what}` },
    );
  } catch (err) {
    throw new Error(
      `${(err as Error).message}\nlast status: ${JSON.stringify(last?.status ?? {}, null, 1).slice(0, 4000)}`,
    );
  }
}

/** Waits until the operation on `revision` has finished and returns its state (phase Succeeded, Failed or Error). */
export async function waitForOperation(name: string, revision: string, timeoutMs = 180_000) {
  return waitForApp(
    name,
    `operation on ${revision.slice(0, 8)} finished`,
    (app) => {
      const op = app.status?.operationState;
      if (app.operation !== undefined || !op || op.operation?.sync?.revision !== revision) return undefined;
      return ['Succeeded', 'Failed', 'Error'].includes(op.phase ?? '') ? op : undefined;
    },
    timeoutMs,
  );
}

/** Deletes the Application without touching what it synced (no resources finalizer). */
export async function deleteApplication(name: string): Promise<void> {
  await kubectl('admin', [
    '-n',
    ARGOCD_NAMESPACE,
    'delete',
    'application',
    name,
    '--ignore-not-found',
    '--wait=true',
    '--timeout=60s',
  ]);
}

export const resourceOf = (app: Application, kind: string, name: string, namespace?: string): AppResource | undefined =>
  app.status?.resources?.find(
    (r) => r.kind === kind && r.name === name && (namespace === undefined || r.namespace === namespace),
  );

export const comparisonError = (app: Application): string | undefined =>
  app.status?.conditions?.find((c) => c.type === 'ComparisonError')?.message;

/** Resolves once the controller has reconciled the Application after `since` (its reconciledAt moved). */
export async function waitForReconcileAfter(name: string, since: number, timeoutMs = 120_000): Promise<Application> {
  return waitForApp(
    name,
    `reconciled after ${new Date(since).toISOString()}`,
    (app) => {
      const at = app.status?.reconciledAt ? Date.parse(app.status.reconciledAt) : 0;
      // reconciledAt has whole seconds.
      return at >= Math.floor(since / 1000) * 1000 + 1000 ? app : undefined;
    },
    timeoutMs,
  );
}

/** Waits until the Application has compared `revision` (its sync status names it). */
export async function waitForCompared(name: string, revision: string, timeoutMs = 180_000): Promise<Application> {
  return waitForApp(
    name,
    `compared ${revision.slice(0, 8)}`,
    (app) => (app.status?.sync?.revision === revision ? app : undefined),
    timeoutMs,
  );
}
