/**
 * The servers that bench/targets/webhook.ts measures, run as a child process so the load generator and the
 * server never share an event loop (the machine has 2 cores: one for the client, one for the server).
 *
 *   node --import tsx bench/lib/webhook-server.ts MODE --cert F --key F [--projects N] [--kubeconfig F]
 *
 * MODE
 *   bare        node:https createServer with the same certificate and keep-alive; does what any webhook
 *               must do and nothing else: reads the body, parses the AdmissionReview (JSON.parse), and
 *               answers allowed for its uid (JSON.stringify): the P1 baseline.
 *   express     serveHttps + Express with createApp's settings and body parser (express.json, 3 MiB,
 *               any content type), answering the fixed AdmissionReview with res.json: the framework's
 *               floor, without rules, guard or metrics.
 *   tenantgate  serveHttps(createApp(...)) exactly as `tenantgate webhook` wires it (HeadroomGuard.decide
 *               and .pending, WebhookMetrics), over a MemorySnapshot of a synthetic cluster
 *               (--projects N, 5 namespaces and 5 quotas each); no ledger (crossReplicaReservation: false).
 *               The informers are emulated so the guard's memory stays as small as in production: 2 ms
 *               after an admitted growing change, the object "arrives" in the cache (upsert, markSeen,
 *               observe — what startWebhook's cache listener does), and then the snapshot is put back as
 *               it was, so every request sees the same cluster.
 *   ledger      the same, with a real ConfigMapLedger (--kubeconfig, namespace tenantgate-system) over
 *               the Q5 fixture (Q5: --projects N, --namespaces M per project, no quotas yet).
 *   guard       the Q5 fixture with the in-process guard only (no ledger), to attribute the ledger's cost.
 *
 * Prints one JSON line {"port": N} on stdout when listening; exits on SIGTERM/SIGINT. With
 * --profile FILE, SIGUSR2 starts the V8 CPU profiler (answered by {"profiling": true} on stdout) and
 * SIGTERM writes the profile to FILE before exiting: start-up and warm-up stay out of it.
 */
import * as k8s from '@kubernetes/client-node';
import express from 'express';
import { createServer } from 'node:https';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { CacheEvent } from '../../src/kube/informers.js';
import { ConfigMapLedger } from '../../src/ledger/ledger.js';
import {
  applyWebhookV8Flags,
  decisionLog,
  webhookApp,
  wireGuard,
  type SnapshotSource,
} from '../../src/webhook/start.js';
import { createLogger } from '../../src/log.js';
import { createApp, MAX_BODY_BYTES, type Decide } from '../../src/webhook/server.js';
import type { Verdict } from '../../src/validate/admission.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import { serveHttps } from '../../src/webhook/tls.js';

// ---------------------------------------------------------------------------------------------
// Fixtures, shared with bench/targets/webhook.ts (which builds the matching request bodies)
// ---------------------------------------------------------------------------------------------

export const NAMESPACES_PER_PROJECT = 5;
export const QUOTA_NAME = 'tenantgate-quota';

export function pad(i: number): string {
  return String(i).padStart(5, '0');
}
/** Same-length names: no prefix is a leading part of another (N4). */
export const projectName = (i: number): string => `p${pad(i)}`;
export const tenantName = (i: number): string => `t${pad(i)}`;
export const ownerUser = (i: number): string => `owner-${i}@example.com`;
export const ownerGroup = (i: number): string => `t${pad(i)}:admins`;
export const namespaceName = (i: number, n: number): string => `${projectName(i)}-ns${n}`;
export const projectUid = (i: number): string => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

/** A Project as render emits it (budget, defaults, 5 declared namespaces with quotas). */
export function fixtureProject(i: number, namespaces = NAMESPACES_PER_PROJECT): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: {
      name: projectName(i),
      labels: { 'app.kubernetes.io/managed-by': 'tenantgate' },
      annotations: { 'argocd.argoproj.io/sync-wave': '-2' },
      finalizers: ['tenantgate.io/cascade-delete'],
    },
    spec: {
      tenant: tenantName(i),
      displayName: `Synthetic project ${i}`,
      owners: [
        { kind: 'Group', name: ownerGroup(i) },
        { kind: 'User', name: ownerUser(i) },
      ],
      quota: { hard: { 'requests.cpu': '100', 'requests.memory': '200Gi', 'limits.cpu': '200', pods: '1000' } },
      namespaceDefaults: {
        quota: { hard: { 'requests.cpu': '1', 'requests.memory': '2Gi', 'limits.cpu': '2', pods: '10' } },
        limitRange: { default: { cpu: '500m', memory: '512Mi' }, defaultRequest: { cpu: '100m', memory: '128Mi' } },
      },
      networkIsolation: true,
      namespaces: Array.from({ length: namespaces }, (_, n) => ({
        name: namespaceName(i, n),
        quota: { hard: { 'requests.cpu': '4', 'requests.memory': '8Gi', 'limits.cpu': '8', pods: '40' } },
      })),
    },
  };
}

export function fixtureNamespace(i: number, n: number): NamespaceObject {
  const name = namespaceName(i, n);
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name,
      labels: {
        'kubernetes.io/metadata.name': name,
        'tenantgate.io/project': projectName(i),
        'tenantgate.io/tenant': tenantName(i),
        'app.kubernetes.io/managed-by': 'tenantgate',
      },
      annotations: { 'tenantgate.io/project-uid': projectUid(i), 'argocd.argoproj.io/sync-wave': '-1' },
    },
  };
}

export function fixtureQuota(i: number, n: number, cpu = '4'): ResourceQuotaObject {
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: {
      name: QUOTA_NAME,
      namespace: namespaceName(i, n),
      labels: { 'tenantgate.io/project': projectName(i), 'app.kubernetes.io/managed-by': 'tenantgate' },
      annotations: { 'argocd.argoproj.io/sync-wave': '0' },
    },
    spec: { hard: { 'requests.cpu': cpu, 'requests.memory': '8Gi', 'limits.cpu': '8', pods: '40' } },
  };
}

/** What the informers would hold: status filled in as the apiserver and kube-controller-manager do. */
export function p1Snapshot(projects: number): MemorySnapshot {
  const s = new MemorySnapshot();
  for (let i = 0; i < projects; i++) {
    const p = fixtureProject(i);
    p.metadata.uid = projectUid(i);
    p.metadata.resourceVersion = String(1000 + i);
    p.metadata.generation = 1;
    p.metadata.creationTimestamp = '2026-01-01T00:00:00Z';
    s.upsertProject(p);
    for (let n = 0; n < NAMESPACES_PER_PROJECT; n++) {
      const ns = fixtureNamespace(i, n);
      ns.metadata.uid = `ns-${i}-${n}`;
      ns.metadata.resourceVersion = String(100000 + i * 10 + n);
      ns.metadata.creationTimestamp = '2026-01-01T00:00:00Z';
      ns.status = { phase: 'Active' };
      s.upsertNamespace(ns);
      const q = fixtureQuota(i, n);
      q.metadata.uid = `q-${i}-${n}`;
      q.metadata.resourceVersion = String(200000 + i * 10 + n);
      q.status = {
        hard: { ...q.spec!.hard! },
        used: { 'requests.cpu': '1200m', 'requests.memory': '3Gi', 'limits.cpu': '2', pods: '7' },
      };
      s.upsertQuota(q);
    }
  }
  return s;
}

/** Q5 fixture: big budgets, namespaces without quotas and no namespaceDefaults, so every quota CREATE grows. */
export const q5ProjectName = (i: number): string => `q5p${String(i).padStart(3, '0')}`;
export const q5NamespaceName = (i: number, n: number): string => `${q5ProjectName(i)}-ns${String(n).padStart(3, '0')}`;
export const q5Owner = (i: number): string => `q5-owner-${i}@example.com`;

export function q5Snapshot(projects: number, namespaces: number): MemorySnapshot {
  const s = new MemorySnapshot();
  for (let i = 0; i < projects; i++) {
    s.upsertProject({
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: q5ProjectName(i), uid: `q5-${i}`, finalizers: ['tenantgate.io/cascade-delete'] },
      spec: {
        tenant: `q5t${i}`,
        owners: [{ kind: 'User', name: q5Owner(i) }],
        quota: { hard: { 'requests.cpu': '10000', pods: '100000' } },
      },
    });
    for (let n = 0; n < namespaces; n++) {
      const name = q5NamespaceName(i, n);
      s.upsertNamespace({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name,
          uid: `q5-${i}-${n}`,
          labels: {
            'kubernetes.io/metadata.name': name,
            'tenantgate.io/project': q5ProjectName(i),
            'tenantgate.io/tenant': `q5t${i}`,
          },
        },
        status: { phase: 'Active' },
      });
    }
  }
  return s;
}

/** The bare baseline's answer for a review's uid (serialised per request, as every webhook must). */
export const bareAnswer = (uid: string): string =>
  JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } });
/** The express floor's fixed answer. */
export const BARE_RESPONSE = bareAnswer('00000000-0000-0000-0000-000000000000');

/** A snapshot that is synced from the start and changes only when the bench says so (no apiserver). */
export class StaticSource implements SnapshotSource {
  readonly synced = true;
  private readonly listeners: Array<(e: CacheEvent) => void> = [];
  constructor(readonly snapshot: MemorySnapshot) {}
  start(): void {}
  async waitSynced(): Promise<void> {}
  async stop(): Promise<void> {}
  onEvent(listener: (e: CacheEvent) => void): void {
    this.listeners.push(listener);
  }
  emit(e: CacheEvent): void {
    for (const l of this.listeners) l(e);
  }
}

/**
 * The resourceVersion the apiserver gives a stored write: etcd's revision, newer than every version
 * before it. Above every fixture's versions, and increasing.
 */
let revision = 1_000_000_000_000;
const nextResourceVersion = (): string => String((revision += 1));

/**
 * What the watch would deliver after an admitted request: the object appears (an `add` or `update`
 * event to the webhook's listeners) at a new resourceVersion, as the apiserver stores it, then the
 * snapshot is put back, so every request of the run sees the same cluster. The new version matters:
 * the guard keeps an admitted quota write until its cache shows it at a version later than the one the
 * write replaced, as production does until the watch event arrives (docs/benchmarks.md, P1).
 */
export function emulateWatch(source: StaticSource, request: AdmissionRequest): void {
  const { snapshot } = source;
  const object = request.object as Record<string, unknown> | undefined;
  if (!object) return;
  if (request.kind.kind === 'Namespace') {
    const requested = object as unknown as NamespaceObject;
    const ns: NamespaceObject = {
      ...requested,
      metadata: { ...requested.metadata, resourceVersion: nextResourceVersion() },
    };
    const name = ns.metadata?.name ?? '';
    const before = snapshot.namespace(name);
    snapshot.upsertNamespace(ns);
    source.emit({ kind: 'Namespace', type: before ? 'update' : 'add', object: ns as never });
    if (before) snapshot.upsertNamespace(before);
    else snapshot.deleteNamespace(name);
  } else if (request.kind.kind === 'ResourceQuota') {
    const q = object as unknown as ResourceQuotaObject;
    const namespace = request.namespace ?? q.metadata?.namespace ?? '';
    const name = q.metadata?.name ?? '';
    const before = [...snapshot.quotasInNamespace(namespace)].find((x) => x.metadata.name === name);
    const placed = { ...q, metadata: { ...q.metadata, namespace, resourceVersion: nextResourceVersion() } };
    snapshot.upsertQuota(placed);
    source.emit({ kind: 'ResourceQuota', type: before ? 'update' : 'add', object: placed as never });
    if (before) snapshot.upsertQuota(before);
    else snapshot.deleteQuota(namespace, name);
  }
}

// ---------------------------------------------------------------------------------------------
// The child process
// ---------------------------------------------------------------------------------------------

async function serve(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      cert: { type: 'string' },
      key: { type: 'string' },
      projects: { type: 'string', default: '1000' },
      namespaces: { type: 'string', default: '10' },
      kubeconfig: { type: 'string' },
      profile: { type: 'string' },
      // How the decision records are written: as `tenantgate webhook` does (async), sync, or none.
      'decision-log': { type: 'string', default: 'async' },
      // Attribution only (bench/comparisons/webhook-attribution.ts): leave out the emulated watch events, or the rules.
      watch: { type: 'string', default: 'emulate' },
      rules: { type: 'string', default: 'on' },
    },
  });
  const mode = positionals[0];
  if (!values.cert || !values.key) throw new Error('--cert and --key are required');
  const files = { cert: values.cert, key: values.key };
  let server: import('node:https').Server;

  if (mode === 'bare') {
    server = createServer(
      { cert: readFileSync(files.cert), key: readFileSync(files.key), minVersion: 'TLSv1.2' },
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request?: { uid?: string } };
          const answer = Buffer.from(bareAnswer(review.request?.uid ?? ''));
          res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': answer.length });
          res.end(answer);
        });
      },
    );
    server.keepAliveTimeout = 65_000;
  } else if (mode === 'express') {
    const answer = JSON.parse(BARE_RESPONSE) as unknown;
    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false);
    app.post(
      '/validate',
      express.json({ limit: MAX_BODY_BYTES, type: () => true, strict: false }),
      (_req, res) => void res.json(answer),
    );
    server = serveHttps(files, app);
  } else if (mode === 'tenantgate' || mode === 'ledger' || mode === 'guard') {
    // As `tenantgate webhook` starts (TENANTGATE_WEBHOOK_V8_FLAGS replaces them, "" for none).
    const v8flags = applyWebhookV8Flags();
    process.stderr.write(
      `webhook-server: V8 flags for the sync ${JSON.stringify(v8flags.flags)}, execArgv ${JSON.stringify(process.execArgv)}\n`,
    );
    const config: TenantgateConfig = { ...DEFAULT_CONFIG, crossReplicaReservation: mode === 'ledger' };
    const snapshot =
      mode === 'tenantgate'
        ? p1Snapshot(Number(values.projects))
        : q5Snapshot(Number(values.projects), Number(values.namespaces));
    let ledger: ConfigMapLedger | undefined;
    if (mode === 'ledger') {
      if (!values.kubeconfig) throw new Error('ledger mode needs --kubeconfig');
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(values.kubeconfig);
      ledger = new ConfigMapLedger(kc, config.systemNamespace);
    }
    // The fixed snapshot is this server's "first sync": done.
    v8flags.afterSync();
    const source = new StaticSource(snapshot);
    // One JSON record per decision on stderr (the child's log file), as production writes it.
    const recordMode = values['decision-log'];
    if (recordMode !== 'async' && recordMode !== 'sync' && recordMode !== 'none')
      throw new Error(`--decision-log is ${JSON.stringify(recordMode)}; allowed: async, sync, none`);
    const onDecision =
      recordMode === 'none'
        ? undefined
        : decisionLog(createLogger({ name: 'webhook', format: 'json', sync: recordMode === 'sync' }));
    // The production wiring (src/webhook/start.ts: wireGuard + webhookApp), fed from a fixed snapshot.
    if (values.watch !== 'emulate' && values.watch !== 'none')
      throw new Error(`--watch is ${JSON.stringify(values.watch)}; allowed: emulate, none`);
    if (values.rules !== 'on' && values.rules !== 'off')
      throw new Error(`--rules is ${JSON.stringify(values.rules)}; allowed: on, off`);
    const parts = {
      config,
      source,
      ...(ledger ? { ledger } : {}),
      log: (m: string) => process.stderr.write(`webhook-server: ${m}\n`),
      ...(onDecision ? { onDecision } : {}),
    };
    const metrics = new WebhookMetrics();
    const guard = wireGuard({ ...parts, metrics });
    // The emulated informer: each admitted growth "arrives" in the cache 2 ms later (bench only).
    const emulate = mode === 'tenantgate' && values.watch === 'emulate';
    const observed: Decide = (ctx, request, signal) => {
      const admitted = (verdict: Verdict) => {
        if (verdict.violations.length === 0 && verdict.allocation?.grows && !request.dryRun)
          setTimeout(() => emulateWatch(source, request), 2);
        return verdict;
      };
      const decided = guard.decide(ctx, request, signal);
      return decided instanceof Promise ? decided.then(admitted) : admitted(decided);
    };
    const app = webhookApp({ ...parts, metrics, guard, ...(emulate ? { decide: observed } : {}) });
    // --rules off: the same app and records, but every review is admitted without running a rule.
    const served =
      values.rules === 'off'
        ? createApp({
            config,
            snapshot,
            ready: () => true,
            metrics: new WebhookMetrics(),
            decide: () => ({ violations: [], warnings: [] }),
            ...(onDecision ? { onDecision } : {}),
          })
        : app;
    server = serveHttps(files, served);
  } else {
    throw new Error(`unknown mode ${JSON.stringify(mode)}; allowed: bare, express, tenantgate, ledger, guard`);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port, pid: process.pid })}\n`);
  let session: Session | undefined;
  if (values.profile) {
    process.on('SIGUSR2', () => {
      if (session) return;
      session = new Session();
      session.connect();
      void (async () => {
        await session!.post('Profiler.enable');
        await session!.post('Profiler.setSamplingInterval', { interval: 100 });
        await session!.post('Profiler.start');
        process.stdout.write(`${JSON.stringify({ profiling: true })}\n`);
      })();
    });
  }
  const stop = () => {
    void (async () => {
      if (session && values.profile) {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(values.profile, JSON.stringify(profile));
        session.disconnect();
      }
      server.close(() => process.exit(0));
      server.closeAllConnections();
      setTimeout(() => process.exit(0), 2000).unref();
    })();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

// The script's real path: import.meta.url resolves symlinks (a .cache/ linked elsewhere), argv[1] does not.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  serve(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`webhook-server: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
