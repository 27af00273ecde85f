/**
 * The headroom ledger against a model of the cluster (docs/design.md, "Headroom under concurrency"):
 * N webhook replicas — each a real HeadroomGuard wired to its own watch cache by `wireGuard`, as
 * `tenantgate webhook` wires it — share one compare-and-swap ledger (test/support/memory-ledger.ts).
 * A simulated apiserver ("truth") stores what the replicas admit, in any order, with resourceVersion
 * preconditions (two updates at one resourceVersion: one loses), and loses some admitted writes (a later
 * admission plugin refused them). Watch events reach each replica late and in any order across kinds
 * (in order per kind, as one watch stream delivers them), or not at all while its watch is broken;
 * replicas crash (a fresh process lists the truth), the ledger is deleted, the clock moves.
 *
 * After every step, for every resource:
 *   Σ over namespaces of max(truth's hold, live reservation) ≤ budget,
 * where a namespace's hold is max(min spec.hard, min status.hard, max status.used) over its quotas (the
 * defaults for a resource none of them names), and a live reservation is an unexpired ledger entry; and the
 * namespaces of the truth together with the live reservations of namespace creations are at most
 * maxNamespaces. The judge is test/support/budget-invariant.ts, the one every race uses: computed from
 * the truth's stored objects, not by the product's share arithmetic (namespaceShare, quotaHold), which
 * the guard decides with: a bug there must not move the decision and its judge together.
 *
 * The one assumption (stated in docs/design.md): a replica whose watch is connected receives every
 * event within LAG_MS < the reservation TTL, and an admitted write is stored or lost before the clock
 * moves. HEADROOM_MODEL_RUNS scales the run (default 200; `npm run models` runs 5,000, the depth at
 * which it found bugs before), HEADROOM_MODEL_SEED replays one.
 */
import { TEST_NOW } from '../support/instant.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { parseResources } from '../../src/validate/resource-lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { HeadroomGuard, type CacheStreams } from '../../src/webhook/headroom/guard.js';
import { marksReach } from '../../src/webhook/headroom/ledger-settlement.js';
import type { StreamMarks } from '../../src/ledger/ledger.js';
import type { CacheEvent, Kind } from '../../src/kube/informers.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import { wireGuard, type SnapshotSource } from '../../src/webhook/start.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { budgetProjectOf, checkHeadroomInvariant, type LiveReservations } from '../support/budget-invariant.js';

const RUNS = Number(process.env.HEADROOM_MODEL_RUNS ?? 200);
const SEED = process.env.HEADROOM_MODEL_SEED ? Number(process.env.HEADROOM_MODEL_SEED) : undefined;

const TTL_MS = 30_000;
const LAG_MS = 5_000;
const PROJECT = 'm';
const CPU = 'requests.cpu';
const MEM = 'requests.memory';
const BUDGET: Record<string, string> = { [CPU]: '6', [MEM]: '6' };
const MAX_NAMESPACES = 3;
const NAMESPACES = ['m-a', 'm-b', 'm-c', 'm-d'];
const QUOTAS = ['q1', 'q2'];
const config = { ...DEFAULT_CONFIG, reservationTtlSeconds: TTL_MS / 1000 };
const DEFAULTS: Record<string, string> = { [CPU]: '1', [MEM]: '1' };

const project: Project = {
  metadata: { name: PROJECT, uid: 'uid-m', resourceVersion: '1' },
  spec: {
    tenant: 'acme',
    owners: [{ kind: 'User', name: 'alice' }],
    quota: { hard: BUDGET },
    maxNamespaces: MAX_NAMESPACES,
    namespaceDefaults: { quota: { hard: DEFAULTS } },
  },
};
const nsObject = (name: string, rv: number): NamespaceObject => ({
  metadata: {
    name,
    resourceVersion: String(rv),
    labels: { 'tenantgate.io/project': PROJECT, 'tenantgate.io/tenant': 'acme' },
  },
});
const hard = (cpu: number, mem: number) => ({ [CPU]: String(cpu), [MEM]: String(mem) });

// ---------------------------------------------------------------------------------------------
// The apiserver: stored objects with resourceVersions, and the events every watch will deliver.
// ---------------------------------------------------------------------------------------------

interface WatchEvent {
  kind: Kind;
  type: CacheEvent['type'];
  object: NamespaceObject | ResourceQuotaObject;
  at: number;
}

class Truth {
  readonly snapshot = MemorySnapshot.of({ projects: [project] });
  private rv = 10;
  /** etcd's revision: the resourceVersion of the last write (a list's resourceVersion). */
  get revision(): number {
    return this.rv;
  }
  readonly listeners: Array<(e: WatchEvent) => void> = [];
  constructor(readonly clock: { now: number }) {}

  private emit(kind: Kind, type: CacheEvent['type'], object: NamespaceObject | ResourceQuotaObject): void {
    for (const l of this.listeners) l({ kind, type, object: structuredClone(object), at: this.clock.now });
  }
  /** A namespace's incarnation: its creation's resourceVersion (undefined: none). */
  incarnation(namespace: string): string | undefined {
    return this.snapshot.namespace(namespace)?.metadata.uid;
  }
  quota(namespace: string, name: string): ResourceQuotaObject | undefined {
    for (const q of this.snapshot.quotasInNamespace(namespace)) if (q.metadata.name === name) return q;
    return undefined;
  }
  createNamespace(name: string): boolean {
    if (this.snapshot.namespace(name)) return false;
    const ns = nsObject(name, ++this.rv);
    ns.metadata.uid = `uid-${this.rv}`;
    this.snapshot.upsertNamespace(ns);
    this.emit('Namespace', 'add', ns);
    return true;
  }
  deleteNamespace(name: string): void {
    if (!this.snapshot.namespace(name)) return;
    for (const q of [...this.snapshot.quotasInNamespace(name)]) this.deleteQuota(name, q.metadata.name ?? '');
    const gone = {
      ...this.snapshot.namespace(name)!,
      metadata: { ...this.snapshot.namespace(name)!.metadata, resourceVersion: String(++this.rv) },
    };
    this.snapshot.deleteNamespace(name);
    this.emit('Namespace', 'delete', gone);
  }
  /** CREATE (no old), UPDATE or DELETE at the old object's resourceVersion; false: refused (exists, conflict, gone). */
  writeQuota(
    namespace: string,
    name: string,
    spec: ResourceQuotaObject['spec'] | null,
    oldRv: string | undefined,
    incarnation: string | undefined,
  ): boolean {
    const stored = this.quota(namespace, name);
    // The namespace the request was admitted in must still be the one (NamespaceLifecycle admitted it
    // there; deleting a namespace takes far longer than a request lives, so no new one of that name can
    // have replaced it meanwhile).
    if (!this.snapshot.namespace(namespace) || this.incarnation(namespace) !== incarnation) return false;
    if (oldRv === undefined ? stored !== undefined : stored?.metadata.resourceVersion !== oldRv) return false;
    if (spec === null) return (this.deleteQuota(namespace, name), true);
    // An update keeps the stored status (the quota controller copies the new spec into status.hard
    // later: the `status` step). A created quota is modelled with its first status at once: a quota
    // the controller has not enforced yet does not limit the namespace (quotaHold), which is outside
    // what the ledger can know.
    const status = stored ? stored.status : { hard: { ...(spec?.hard ?? {}) } };
    const q: ResourceQuotaObject = {
      metadata: { name, namespace, resourceVersion: String(++this.rv) },
      spec: structuredClone(spec),
      ...(status ? { status: structuredClone(status) } : {}),
    };
    this.snapshot.upsertQuota(q);
    this.emit('ResourceQuota', stored ? 'update' : 'add', q);
    return true;
  }
  private deleteQuota(namespace: string, name: string): void {
    const stored = this.quota(namespace, name);
    if (!stored) return;
    this.snapshot.deleteQuota(namespace, name);
    this.emit('ResourceQuota', 'delete', {
      ...stored,
      metadata: { ...stored.metadata, resourceVersion: String(++this.rv) },
    });
  }
  /**
   * The quota controller. Without `used`: the quota's status.hard := its spec.hard. With `used`: pods
   * start or stop, and every quota of the namespace reports them in status.used, as much of the asked
   * amount as the ResourceQuota admission plugin lets in (what fits every quota's status.hard) — or
   * what was in use already, which a lowered quota does not evict.
   */
  setStatus(namespace: string, name: string, used?: { cpu: number; mem: number }): void {
    const stored = this.quota(namespace, name);
    if (!stored) return;
    const bump = (q: ResourceQuotaObject, status: NonNullable<ResourceQuotaObject['status']>) => {
      const next: ResourceQuotaObject = {
        ...q,
        metadata: { ...q.metadata, resourceVersion: String(++this.rv) },
        status,
      };
      this.snapshot.upsertQuota(next);
      this.emit('ResourceQuota', 'update', next);
    };
    if (!used)
      return bump(stored, {
        hard: { ...(stored.spec?.hard ?? {}) },
        ...(stored.status?.used ? { used: { ...stored.status.used } } : {}),
      });
    const quotas = [...this.snapshot.quotasInNamespace(namespace)];
    const usedList: Record<string, string> = {};
    for (const [r, v] of [
      [CPU, used.cpu],
      [MEM, used.mem],
    ] as const) {
      let value = Quantity.parse(String(v));
      for (const q of quotas) {
        const limit = parseResources(q.status?.hard).get(r);
        if (limit && value.cmp(limit) > 0) value = limit;
      }
      const before = quotas.map((q) => parseResources(q.status?.used).get(r)).find((x) => x !== undefined);
      if (before && before.cmp(value) > 0 && Quantity.parse(String(v)).cmp(before) >= 0) value = before;
      usedList[r] = value.toString();
    }
    for (const q of quotas) bump(q, { hard: { ...(q.status?.hard ?? {}) }, used: { ...usedList } });
  }
  objects(): { namespaces: NamespaceObject[]; quotas: ResourceQuotaObject[] } {
    const namespaces = [...this.snapshot.namespacesOfProject(PROJECT)];
    return {
      namespaces: structuredClone(namespaces),
      quotas: structuredClone(namespaces.flatMap((n) => [...this.snapshot.quotasInNamespace(n.metadata.name ?? '')])),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// A replica: a watch cache fed by (late) events, and the guard wired to it as in production.
// ---------------------------------------------------------------------------------------------

/**
 * What a replica's version does with the ledger's settled marks (docs/adr/0003-headroom-ledger.md):
 * `settles` (ledgerSettlement on), `honours` (off: it waits for the marks and carries them over, drops
 * nothing), `ignores` (a version before settlement: no marks at all).
 */
type Role = 'settles' | 'honours' | 'ignores';

class Replica implements SnapshotSource {
  snapshot!: MemorySnapshot;
  synced = true;
  upToDate = true;
  guard!: HeadroomGuard;
  /** Per watch stream, the resourceVersion of the last event delivered, or of the last list. */
  private readonly watermarks: StreamMarks = { Namespace: '0', ResourceQuota: '0' };
  /**
   * The watermarks and the probe of src/webhook/headroom/guard.ts's CacheStreams. The probe writes a marker
   * object of each kind: its event arrives after every event queued before it, so waiting for it
   * delivers the whole queue in order; a broken watch delivers nothing and the probe fails.
   */
  get streams(): CacheStreams | undefined {
    return this.role === 'ignores' ? undefined : this.cacheStreams;
  }
  private readonly cacheStreams: CacheStreams = {
    marks: () => ({ ...this.watermarks }),
    catchUp: async (needed, ms) => {
      if (this.probeOverruns) await new Promise((r) => setTimeout(r, ms + 20));
      if (!this.upToDate || this.probeStalls || this.probeOverruns) return false;
      for (const kind of ['Namespace', 'ResourceQuota'] as const) this.deliver(kind, Infinity);
      this.watermarks.Namespace = this.watermarks.ResourceQuota = String(this.truth.revision);
      this.probes += 1;
      return marksReach(this.watermarks, needed);
    },
  };
  probes = 0;
  /** The probe's marker does not arrive before the decision's deadline (a slow or stalled stream). */
  probeStalls = false;
  /** As probeStalls, and the catch-up gives up only after the decision's deadline has passed. */
  probeOverruns = false;
  private listeners: Array<(e: CacheEvent) => void> = [];
  readonly queue: Record<'Namespace' | 'ResourceQuota', WatchEvent[]> = { Namespace: [], ResourceQuota: [] };

  constructor(
    private readonly truth: Truth,
    private readonly ledger: MemoryLedger,
    private readonly clock: { now: number },
    readonly role: Role = 'settles',
  ) {
    truth.listeners.push((e) => this.queue[e.kind as 'Namespace' | 'ResourceQuota'].push(e));
    this.boot();
  }

  /** A new process: lists the truth, a fresh guard. */
  boot(): void {
    const { namespaces, quotas } = this.truth.objects();
    this.snapshot = MemorySnapshot.of({ projects: [structuredClone(project)], namespaces, quotas });
    this.listeners = [];
    this.queue.Namespace = [];
    this.queue.ResourceQuota = [];
    this.upToDate = true;
    this.watermarks.Namespace = this.watermarks.ResourceQuota = String(this.truth.revision);
    // Callers authenticated (the apiserver's client certificate): reservations live the configured TTL.
    this.guard = wireGuard({
      config: { ...config, ledgerSettlement: this.role === 'settles' },
      source: this,
      ledger: this.ledger,
      now: () => this.clock.now,
      metrics: new WebhookMetrics(),
      authenticate: () => ({ ok: true, name: 'apiserver' }),
    });
  }

  start(): void {}
  async waitSynced(): Promise<void> {}
  async stop(): Promise<void> {}
  onEvent(listener: (e: CacheEvent) => void): void {
    this.listeners.push(listener);
  }

  private apply(kind: Kind, type: CacheEvent['type'], object: NamespaceObject | ResourceQuotaObject): void {
    if (kind === 'Namespace') {
      if (type === 'delete') this.snapshot.deleteNamespace(object.metadata.name ?? '');
      else this.snapshot.upsertNamespace(object as NamespaceObject);
    } else if (type === 'delete')
      this.snapshot.deleteQuota(object.metadata.namespace ?? '', object.metadata.name ?? '');
    else this.snapshot.upsertQuota(object as ResourceQuotaObject);
    const event = { kind, type, object } as CacheEvent;
    for (const l of this.listeners) l(event);
  }

  /** Delivers up to `count` events of one kind (in their order), or every one older than `before`. */
  deliver(kind: 'Namespace' | 'ResourceQuota', count: number, before = -Infinity): void {
    if (!this.upToDate) return;
    const q = this.queue[kind];
    while (q.length > 0 && (count-- > 0 || q[0]!.at <= before)) {
      const e = q.shift()!;
      this.apply(e.kind, e.type, e.object);
      this.watermarks[kind] = e.object.metadata.resourceVersion ?? this.watermarks[kind];
    }
  }

  /** The watch breaks: nothing arrives until it re-lists. */
  breakWatch(): void {
    this.upToDate = false;
  }

  /** A re-list: the informer's events for what differs from the truth, then the watch is connected again. */
  relist(): void {
    const { namespaces, quotas } = this.truth.objects();
    this.queue.Namespace = [];
    this.queue.ResourceQuota = [];
    const names = new Set(namespaces.map((n) => n.metadata.name ?? ''));
    const quotaKeys = new Set(quotas.map((q) => `${q.metadata.namespace}/${q.metadata.name}`));
    for (const n of [...this.snapshot.namespacesOfProject(PROJECT)]) {
      for (const q of [...this.snapshot.quotasInNamespace(n.metadata.name ?? '')])
        if (!quotaKeys.has(`${q.metadata.namespace}/${q.metadata.name}`)) this.apply('ResourceQuota', 'delete', q);
      if (!names.has(n.metadata.name ?? '')) this.apply('Namespace', 'delete', n);
    }
    for (const n of namespaces)
      this.apply('Namespace', this.snapshot.namespace(n.metadata.name ?? '') ? 'update' : 'add', n);
    for (const q of quotas)
      this.apply(
        'ResourceQuota',
        [...this.snapshot.quotasInNamespace(q.metadata.namespace ?? '')].some(
          (c) => c.metadata.name === q.metadata.name,
        )
          ? 'update'
          : 'add',
        q,
      );
    this.watermarks.Namespace = this.watermarks.ResourceQuota = String(this.truth.revision);
    this.upToDate = true;
  }
}

// ---------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------

type Op =
  | { t: 'nsCreate'; ns: number }
  | { t: 'quotaPut'; ns: number; q: number; cpu: number; mem: number }
  | { t: 'quotaDelete'; ns: number; q: number };

type Step =
  | { t: 'decide'; reqs: Array<{ replica: number; op: Op; dryRun: boolean }> }
  | { t: 'commit'; pick: number; lose: boolean }
  | { t: 'deliver'; replica: number; kind: 'Namespace' | 'ResourceQuota'; count: number }
  | { t: 'advance'; ms: number }
  | { t: 'crash'; replica: number }
  | { t: 'breakWatch'; replica: number }
  | { t: 'stallProbe'; replica: number; stalls: boolean }
  | { t: 'relist'; replica: number }
  | { t: 'deleteLedger' }
  | { t: 'corruptLedger'; key: 'reservations' | 'settled' }
  | { t: 'repairLedger' }
  | { t: 'nsDelete'; ns: number }
  | { t: 'status'; ns: number; q: number; used: { cpu: number; mem: number } | undefined };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant('nsCreate' as const), ns: fc.nat(NAMESPACES.length - 1) }),
  fc.record({
    t: fc.constant('quotaPut' as const),
    ns: fc.nat(NAMESPACES.length - 1),
    q: fc.nat(QUOTAS.length - 1),
    cpu: fc.integer({ min: 0, max: 4 }),
    mem: fc.integer({ min: 0, max: 4 }),
  }),
  fc.record({
    t: fc.constant('quotaPut' as const),
    ns: fc.nat(NAMESPACES.length - 1),
    q: fc.nat(QUOTAS.length - 1),
    cpu: fc.integer({ min: 0, max: 4 }),
    mem: fc.integer({ min: 0, max: 4 }),
  }),
  fc.record({
    t: fc.constant('quotaDelete' as const),
    ns: fc.nat(NAMESPACES.length - 1),
    q: fc.nat(QUOTAS.length - 1),
  }),
);

const step = (replicas: number): fc.Arbitrary<Step> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('decide' as const),
        reqs: fc.array(
          fc.record({ replica: fc.nat(replicas - 1), op, dryRun: fc.integer({ min: 0, max: 4 }).map((n) => n === 0) }),
          { minLength: 1, maxLength: 4 },
        ),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        t: fc.constant('commit' as const),
        pick: fc.nat(7),
        lose: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        t: fc.constant('deliver' as const),
        replica: fc.nat(replicas - 1),
        kind: fc.constantFrom('Namespace' as const, 'ResourceQuota' as const),
        count: fc.integer({ min: 1, max: 3 }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('advance' as const),
        ms: fc.constantFrom(0, 1_000, 4_000, 12_000, 26_000, 31_000),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('crash' as const), replica: fc.nat(replicas - 1) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('breakWatch' as const), replica: fc.nat(replicas - 1) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('relist' as const), replica: fc.nat(replicas - 1) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('stallProbe' as const),
        replica: fc.nat(replicas - 1),
        stalls: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('deleteLedger' as const) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('corruptLedger' as const),
        key: fc.constantFrom('reservations' as const, 'settled' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('repairLedger' as const) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('nsDelete' as const), ns: fc.nat(NAMESPACES.length - 1) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('status' as const),
        ns: fc.nat(NAMESPACES.length - 1),
        q: fc.nat(QUOTAS.length - 1),
        used: fc.option(fc.record({ cpu: fc.integer({ min: 0, max: 4 }), mem: fc.integer({ min: 0, max: 4 }) }), {
          nil: undefined,
        }),
      }),
    },
  );

/** An admitted request the apiserver has yet to store (or lose). */
interface InFlight {
  store(): boolean;
  describe: string;
}

class World {
  readonly clock = { now: 1_000_000 };
  readonly truth = new Truth(this.clock);
  readonly ledger = new MemoryLedger();
  readonly replicas: Replica[];
  readonly inFlight: InFlight[] = [];
  readonly log: string[] = [];
  private uid = 0;
  /** When the ledger became unreadable (corruptLedger), until it is repaired. */
  private corruptedAt: number | undefined;

  /** `roles`: each replica's (default: every one settles). */
  constructor(n: number, roles: readonly Role[] = []) {
    // A namespace with one quota to start from.
    this.truth.createNamespace('m-a');
    this.truth.writeQuota('m-a', 'q1', { hard: hard(1, 1) }, undefined, this.truth.incarnation('m-a'));
    this.replicas = Array.from(
      { length: n },
      (_, i) => new Replica(this.truth, this.ledger, this.clock, roles[i] ?? 'settles'),
    );
  }

  private request(o: Op, dryRun: boolean): { request: AdmissionRequest; store: () => boolean; describe: string } {
    const uid = `u${++this.uid}`;
    const user = { username: 'alice', groups: [] };
    const namespace = NAMESPACES[o.ns]!;
    if (o.t === 'nsCreate') {
      return {
        request: {
          uid,
          kind: { group: '', version: 'v1', kind: 'Namespace' },
          operation: 'CREATE',
          name: namespace,
          userInfo: user,
          object: nsObject(namespace, 0) as never,
          ...(dryRun ? { dryRun } : {}),
        },
        store: () => this.truth.createNamespace(namespace),
        describe: `create namespace ${namespace}`,
      };
    }
    const name = QUOTAS[o.q]!;
    const stored = this.truth.quota(namespace, name);
    const incarnation = this.truth.incarnation(namespace);
    const kind = { group: '', version: 'v1', kind: 'ResourceQuota' };
    if (o.t === 'quotaDelete') {
      const oldRv = stored?.metadata.resourceVersion ?? '0';
      return {
        request: {
          uid,
          kind,
          operation: 'DELETE',
          namespace,
          name,
          userInfo: user,
          oldObject: structuredClone(stored ?? { metadata: { name, namespace } }) as never,
          ...(dryRun ? { dryRun } : {}),
        },
        store: () => this.truth.writeQuota(namespace, name, null, oldRv, incarnation),
        describe: `delete quota ${namespace}/${name}@${oldRv}`,
      };
    }
    const spec = { hard: hard(o.cpu, o.mem) };
    const object = { metadata: { name, namespace }, spec };
    if (!stored) {
      return {
        request: {
          uid,
          kind,
          operation: 'CREATE',
          namespace,
          name,
          userInfo: user,
          object: object as never,
          ...(dryRun ? { dryRun } : {}),
        },
        store: () => this.truth.writeQuota(namespace, name, spec, undefined, incarnation),
        describe: `create quota ${namespace}/${name} cpu ${o.cpu} mem ${o.mem}`,
      };
    }
    const oldRv = stored.metadata.resourceVersion;
    return {
      request: {
        uid,
        kind,
        operation: 'UPDATE',
        namespace,
        name,
        userInfo: user,
        object: { ...object, metadata: { ...object.metadata, resourceVersion: oldRv } } as never,
        oldObject: structuredClone(stored) as never,
        ...(dryRun ? { dryRun } : {}),
      },
      store: () => this.truth.writeQuota(namespace, name, spec, oldRv, incarnation),
      describe: `update quota ${namespace}/${name}@${oldRv} cpu ${o.cpu} mem ${o.mem}`,
    };
  }

  async run(s: Step): Promise<void> {
    switch (s.t) {
      case 'decide': {
        const built = s.reqs.map((r) => ({ r, ...this.request(r.op, r.dryRun) }));
        const verdicts = await Promise.all(
          built.map(({ r, request }) => {
            const replica = this.replicas[r.replica]!;
            return replica.guard.decide(
              { at: TEST_NOW, config, snapshot: replica.snapshot, user: request.userInfo },
              request,
            );
          }),
        );
        built.forEach(({ r, store, describe }, i) => {
          const v = verdicts[i]!;
          const admitted = v.violations.length === 0;
          this.log.push(
            `replica ${r.replica}: ${describe}${r.dryRun ? ' (dry run)' : ''} → ${admitted ? 'admitted' : v.violations.map((x) => x.message).join('; ')}`,
          );
          if (admitted && !r.dryRun) this.inFlight.push({ store, describe });
        });
        return;
      }
      case 'commit': {
        if (this.inFlight.length === 0) return;
        const [w] = this.inFlight.splice(s.pick % this.inFlight.length, 1);
        const stored = !s.lose && w!.store();
        this.log.push(
          `apiserver: ${w!.describe} → ${s.lose ? 'lost (a later admission plugin refused it)' : stored ? 'stored' : 'refused (exists, conflict or gone)'}`,
        );
        return;
      }
      case 'deliver':
        this.replicas[s.replica]!.deliver(s.kind, s.count);
        return;
      case 'advance': {
        // What was admitted is stored (or lost) before time passes: a request lives ≤ its webhook timeout.
        while (this.inFlight.length > 0) await this.run({ t: 'commit', pick: 0, lose: false });
        this.clock.now += s.ms;
        this.log.push(`clock +${s.ms} ms`);
        for (const r of this.replicas)
          for (const kind of ['Namespace', 'ResourceQuota'] as const) r.deliver(kind, 0, this.clock.now - LAG_MS);
        return;
      }
      case 'crash':
        this.replicas[s.replica]!.boot();
        this.log.push(`replica ${s.replica} crashed and started again`);
        return;
      case 'breakWatch':
        this.replicas[s.replica]!.breakWatch();
        this.log.push(`replica ${s.replica}: watch broken`);
        return;
      case 'stallProbe':
        this.replicas[s.replica]!.probeStalls = s.stalls;
        this.log.push(`replica ${s.replica}: its streams ${s.stalls ? 'stall (a probe times out)' : 'flow again'}`);
        return;
      case 'relist':
        if (this.replicas[s.replica]!.upToDate) return;
        this.replicas[s.replica]!.relist();
        this.log.push(`replica ${s.replica}: re-listed`);
        return;
      case 'deleteLedger':
        this.ledger.delete(PROJECT);
        this.log.push('operator: kubectl delete the ledger');
        return;
      case 'corruptLedger': {
        // A hand edit or a truncation: the reservations cut short, or marks of the wrong type. The judge
        // still counts the entries the ledger held: they stand for admitted changes until they expire.
        const entries = this.ledger.entries(PROJECT);
        if (!entries || this.ledger.corrupted(PROJECT)) return;
        const text = s.key === 'reservations' ? JSON.stringify(entries).slice(0, -1) : '{"Namespace":1}';
        this.ledger.corrupt(PROJECT, s.key, text);
        this.corruptedAt = this.clock.now;
        this.log.push(`operator: edits the ledger's ${s.key} into ${text}`);
        return;
      }
      case 'repairLedger':
        // The repair docs/design.md gives ("An unreadable ledger"): once the reservation TTL has passed since
        // it became unreadable, delete it and remove its finalizer.
        if (this.corruptedAt === undefined || this.clock.now < this.corruptedAt + TTL_MS) return;
        this.ledger.delete(PROJECT);
        this.ledger.removeFinalizerByHand(PROJECT);
        this.corruptedAt = undefined;
        this.log.push('operator: deletes the unreadable ledger and removes its finalizer');
        return;
      case 'nsDelete':
        this.truth.deleteNamespace(NAMESPACES[s.ns]!);
        this.log.push(`namespace ${NAMESPACES[s.ns]} deleted`);
        return;
      case 'status': {
        // The quota controller works on stored quotas: the step picks one of them (a step on a quota
        // that is not there would be a no-op, and the runs would seldom reach a quota used above its hard).
        const stored = NAMESPACES.flatMap((ns) =>
          QUOTAS.filter((q) => this.truth.quota(ns, q)).map((q) => [ns, q] as const),
        );
        if (stored.length === 0) return;
        const [ns, q] = stored[(s.ns * QUOTAS.length + s.q) % stored.length]!;
        this.truth.setStatus(ns, q, s.used);
        const after = this.truth.quota(ns, q)?.status;
        this.log.push(
          `quota controller: ${ns}/${q} status.hard ${JSON.stringify(after?.hard ?? {})}, used ${JSON.stringify(after?.used ?? {})}`,
        );
        return;
      }
    }
  }

  /** The invariant (test/support/budget-invariant.ts), against the truth and the ledger's live entries; a message when it is broken. */
  violation(): string | undefined {
    const live = (this.ledger.entries(PROJECT) ?? []).filter((e) => e.expires > this.clock.now);
    const reserved: LiveReservations = { allocations: {}, creating: [] };
    for (const e of live) {
      const held = (reserved.allocations[e.namespace] ??= {});
      for (const [r, v] of Object.entries(e.allocation))
        if (held[r] === undefined || Quantity.parse(v).cmp(Quantity.parse(held[r])) > 0) held[r] = v;
      if (e.quota === undefined) reserved.creating.push(e.namespace);
    }
    const { namespaces, quotas } = this.truth.objects();
    const judged = checkHeadroomInvariant(budgetProjectOf(project), namespaces, quotas, '', reserved);
    if (judged.violations.length === 0) return undefined;
    return `${judged.violations.join('; ')} (${JSON.stringify(judged.detail)}); live entries ${JSON.stringify(live)}`;
  }
}

export { World, type Step };

describe('headroom ledger model: replicas, lagging caches, crashes and a deleted ledger never overspend', () => {
  it(
    'holds the invariant after every step',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          // Replicas that settle beside replicas that only honour the marks (ledgerSettlement off, or a rollout under way).
          fc
            .integer({ min: 2, max: 4 })
            .chain((n) =>
              fc.tuple(
                fc.constant(n),
                fc.array(fc.constantFrom<Role>('settles', 'honours'), { minLength: n, maxLength: n }),
                fc.array(step(n), { minLength: 5, maxLength: 60 }),
              ),
            ),
          async ([n, roles, steps]) => {
            const world = new World(n, roles);
            for (const s of steps) {
              await world.run(s);
              const broken = world.violation();
              if (broken)
                throw new Error(`invariant broken (replicas ${roles.join(', ')}): ${broken}\n${world.log.join('\n')}`);
            }
          },
        ),
        { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) },
      );
    },
    Math.max(120_000, RUNS * 100),
  );

  it('a namespace deleted and created again while a cache still shows its old quotas: a new quota there counts alone', async () => {
    // Found by the property above (seed -401108462 at 5,000 runs): replica 0 re-creates m-a while its cache
    // still shows m-a's old quota q1 (mem 1); q2 (mem 3) in the new m-a looked capped by q1 and reserved
    // nothing, and m-b then took the room m-a really holds.
    const steps = [
      { t: 'nsDelete', ns: 0 },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 0 }, dryRun: false }] },
      {
        t: 'decide',
        reqs: [
          { replica: 0, op: { t: 'quotaPut', ns: 2, q: 0, cpu: 2, mem: 1 }, dryRun: false },
          { replica: 0, op: { t: 'quotaPut', ns: 0, q: 0, cpu: 0, mem: 0 }, dryRun: true },
        ],
      },
      { t: 'advance', ms: 0 },
      { t: 'deliver', replica: 0, kind: 'Namespace', count: 1 },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'quotaPut', ns: 0, q: 1, cpu: 0, mem: 3 }, dryRun: false }] },
      { t: 'commit', pick: 0, lose: false },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'quotaPut', ns: 1, q: 0, cpu: 0, mem: 3 }, dryRun: false }] },
    ] as unknown as Step[];
    const world = new World(2);
    for (const s of steps) {
      await world.run(s);
      expect(world.violation(), world.log.join('\n')).toBeUndefined();
    }
  });

  it('a quota lowered below what its pods use frees nothing: the namespace still holds its usage', async () => {
    // m-a's quota goes to cpu 4, its pods use 4, the quota is lowered to 1 (the pods keep running) and
    // the reservation of the raise expires: m-a still holds 4, so m-b may take 1 of the 6, not 5.
    const steps = [
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'quotaPut', ns: 0, q: 0, cpu: 4, mem: 1 }, dryRun: false }] },
      { t: 'commit', pick: 0, lose: false },
      { t: 'status', ns: 0, q: 0, used: undefined },
      { t: 'status', ns: 0, q: 0, used: { cpu: 4, mem: 0 } },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'quotaPut', ns: 0, q: 0, cpu: 1, mem: 1 }, dryRun: false }] },
      { t: 'commit', pick: 0, lose: false },
      { t: 'status', ns: 0, q: 0, used: undefined },
      { t: 'advance', ms: 31_000 },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 1 }, dryRun: false }] },
      { t: 'advance', ms: 0 },
      { t: 'deliver', replica: 0, kind: 'Namespace', count: 1 },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'quotaPut', ns: 1, q: 0, cpu: 4, mem: 1 }, dryRun: false }] },
      { t: 'commit', pick: 0, lose: false },
    ] as unknown as Step[];
    const world = new World(2);
    for (const s of steps) {
      await world.run(s);
      expect(world.violation(), world.log.join('\n')).toBeUndefined();
    }
    expect(world.truth.quota('m-a', 'q1')?.status).toEqual({ hard: hard(1, 1), used: hard(4, 0) });
    expect(world.log.at(-1), world.log.join('\n')).toMatch(
      /^replica 0: create quota m-b\/q1 cpu 4 mem 1 → .*at most 2 fits; counted by usage: m-a holds requests.cpu 4/,
    );
  });

  it('the model can fail: without the ledger, replicas overspend', async () => {
    // The same world with each replica on its own (no shared ledger) finds an overspend: the check is live.
    const found = await fc
      .assert(
        fc.asyncProperty(fc.array(step(3), { minLength: 5, maxLength: 40 }), async (steps) => {
          const world = new World(3);
          for (const r of world.replicas) r.guard = new HeadroomGuard({ ttlMs: TTL_MS, now: () => world.clock.now });
          for (const s of steps) {
            if (s.t === 'crash') continue;
            await world.run(s);
            if (world.violation()) throw new Error('overspent');
          }
        }),
        { numRuns: 300, seed: 42 },
      )
      .then(
        () => false,
        () => true,
      );
    expect(found).toBe(true);
  });
});

describe('headroom ledger model: settled entries (docs/adr/0003-headroom-ledger.md)', () => {
  const run = async (world: World, steps: Step[]) => {
    for (const s of steps) {
      await world.run(s);
      expect(world.violation(), world.log.join('\n')).toBeUndefined();
    }
  };

  // Found by the property with the readiness check removed (seed -519390581 at 2,000 runs): replica 0
  // sees m-c stored and settles its entry with its next write; replica 1's cache does not show m-c
  // yet, and deciding from that ledger without catching up it counted m-c at nothing.
  const settledBeforeLaggingReader = [
    { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 2 }, dryRun: false }] },
    { t: 'commit', pick: 0, lose: false },
    { t: 'deliver', replica: 0, kind: 'Namespace', count: 1 },
    { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 3 }, dryRun: false }] },
    { t: 'commit', pick: 0, lose: true },
    {
      t: 'decide',
      reqs: [
        { replica: 0, op: { t: 'quotaPut', ns: 0, q: 0, cpu: 4, mem: 0 }, dryRun: false },
        { replica: 1, op: { t: 'quotaPut', ns: 1, q: 0, cpu: 1, mem: 2 }, dryRun: false },
      ],
    },
  ] as unknown as Step[];

  it('a replica whose cache has not reached the settled marks catches up before it decides', async () => {
    const world = new World(3);
    await run(world, settledBeforeLaggingReader);
    expect(
      world.ledger.entries(PROJECT)?.some((e) => e.namespace === 'm-c'),
      'm-c settled',
    ).toBe(false);
    expect(world.replicas[1]!.probes, world.log.join('\n')).toBeGreaterThan(0);
    expect(world.log.at(-1), world.log.join('\n')).toMatch(
      /^replica 1: create quota m-b\/q1 .* → .*(fits|exceeds|budget)/,
    );
  });

  it('a replica that does not settle (ledgerSettlement off) still catches up to the marks of one that does', async () => {
    const world = new World(3, ['settles', 'honours', 'honours']);
    await run(world, settledBeforeLaggingReader);
    expect(
      world.ledger.entries(PROJECT)?.some((e) => e.namespace === 'm-c'),
      'm-c settled',
    ).toBe(false);
    expect(world.replicas[1]!.probes, world.log.join('\n')).toBeGreaterThan(0);
  });

  it('the model can fail: a replica of a version that ignores the marks, beside one that settles, overspends', async () => {
    // Why settlement is switched on only once every replica honours the marks (ADR 0003): the same steps
    // with replica 1 ignoring them break the invariant.
    const world = new World(3, ['settles', 'ignores', 'ignores']);
    let broken: string | undefined;
    for (const s of settledBeforeLaggingReader) {
      await world.run(s);
      broken ??= world.violation();
    }
    expect(broken, world.log.join('\n')).toMatch(/requests\.(cpu|memory): the namespaces hold .*, the budget is/);
  });

  it('a namespace re-created: a lagging cache that still shows the old incarnation does not settle the creation', async () => {
    // Found by the property at 5,000 runs (seed -1200933906): replica 0 re-lists after m-a's deletion and
    // admits m-a again (nothing of that name in its cache, so no `replaces`); replica 1, whose cache
    // still showed the old m-a, took it for the new one and settled the creation's entry.
    const steps = [
      { t: 'nsDelete', ns: 0 },
      { t: 'breakWatch', replica: 0 },
      { t: 'relist', replica: 0 },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 0 }, dryRun: false }] },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'quotaPut', ns: 1, q: 0, cpu: 0, mem: 3 }, dryRun: false }] },
      { t: 'crash', replica: 0 },
      { t: 'commit', pick: 2, lose: false },
      {
        t: 'decide',
        reqs: [
          { replica: 1, op: { t: 'nsCreate', ns: 3 }, dryRun: false },
          { replica: 0, op: { t: 'quotaPut', ns: 2, q: 0, cpu: 0, mem: 2 }, dryRun: false },
        ],
      },
    ] as unknown as Step[];
    await run(new World(2), steps);
  });

  it.each(['stalls', 'overruns'] as const)(
    'a replica that cannot catch up in time refuses with [Q5] and reserves nothing (the catch-up %s)',
    async (how) => {
      const world = new World(2);
      if (how === 'stalls') world.replicas[1]!.probeStalls = true;
      // Its deadline passes while it is still catching up: refused for that, not as a ledger that did not answer.
      else world.replicas[1]!.probeOverruns = true;
      await run(world, [
        { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 2 }, dryRun: false }] },
        { t: 'commit', pick: 0, lose: false },
        { t: 'deliver', replica: 0, kind: 'Namespace', count: 1 },
        { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 3 }, dryRun: false }] },
      ] as unknown as Step[]);
      const before = world.ledger.entries(PROJECT)?.length;
      const replica = world.replicas[1]!;
      const request = {
        uid: 'late',
        kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
        operation: 'CREATE',
        namespace: 'm-a',
        name: 'q2',
        userInfo: { username: 'alice', groups: [] },
        object: { metadata: { name: 'q2', namespace: 'm-a' }, spec: { hard: hard(1, 1) } },
      } as unknown as AdmissionRequest;
      const verdict = await replica.guard.decide(
        { at: TEST_NOW, config, snapshot: replica.snapshot, user: request.userInfo },
        request,
      );
      expect(verdict.violations.map((v) => `[${v.rule}] ${v.message}`)).toEqual([
        `[Q5] project m: the headroom ledger counts on changes this webhook replica's watch cache has not received yet, and its watches did not catch up within 2000 ms; nothing was reserved, retry the request`,
      ]);
      expect(world.ledger.entries(PROJECT)?.length).toBe(before);
    },
  );

  it('after a burst the ledger holds what is in flight, not every change of the last TTL', async () => {
    // Twelve changes through two replicas, each stored and delivered before the next; the oracle counts,
    // from the truth, which admitted changes are not stored yet (none but the last) and compares the
    // ledger with that. With settlement off the same burst leaves one entry per (namespace, quota).
    const burst: Step[] = [];
    const ops = [
      { t: 'nsCreate', ns: 1 },
      { t: 'nsCreate', ns: 2 },
      { t: 'quotaPut', ns: 0, q: 0, cpu: 1, mem: 1 },
      { t: 'quotaPut', ns: 1, q: 0, cpu: 1, mem: 1 },
      { t: 'quotaPut', ns: 2, q: 0, cpu: 1, mem: 1 },
      { t: 'quotaPut', ns: 0, q: 1, cpu: 2, mem: 2 },
      { t: 'quotaPut', ns: 1, q: 1, cpu: 2, mem: 2 },
      { t: 'quotaPut', ns: 2, q: 1, cpu: 2, mem: 2 },
      { t: 'quotaPut', ns: 0, q: 0, cpu: 2, mem: 2 },
      { t: 'quotaPut', ns: 1, q: 0, cpu: 2, mem: 2 },
      { t: 'quotaPut', ns: 2, q: 0, cpu: 2, mem: 2 },
      { t: 'quotaPut', ns: 0, q: 1, cpu: 1, mem: 1 },
    ];
    ops.forEach((o, i) => {
      burst.push({ t: 'decide', reqs: [{ replica: i % 2, op: o, dryRun: false }] } as unknown as Step);
      if (i < ops.length - 1) {
        burst.push({ t: 'commit', pick: 0, lose: false } as Step);
        for (const replica of [0, 1])
          for (const kind of ['Namespace', 'ResourceQuota'] as const)
            burst.push({ t: 'deliver', replica, kind, count: 9 } as Step);
      }
    });
    const settled = new World(2);
    await run(settled, burst);
    const admitted = settled.log.filter((l) => / → admitted$/.test(l)).length;
    expect(admitted, settled.log.join('\n')).toBe(ops.length);
    const inFlight = settled.inFlight.length;
    expect(inFlight).toBe(1);
    // The last write may still hold the change before it (its writer's cache showed it only after the
    // write): at most the in-flight change and one batch more.
    expect(
      settled.ledger.entries(PROJECT)!.length,
      JSON.stringify(settled.ledger.entries(PROJECT)),
    ).toBeLessThanOrEqual(inFlight + 1);

    const expiring = new World(2, ['honours', 'honours']);
    await run(expiring, burst);
    expect(expiring.ledger.entries(PROJECT)!.length).toBeGreaterThan(5);
  });
});

describe('headroom ledger model: a ledger that cannot be read fails closed', () => {
  // m-b exists in both caches; replica 0 raises m-a to cpu 4 (admitted, not stored yet: only the ledger
  // knows); the ledger is then edited into something unreadable. Read as empty, it would let replica 1,
  // whose cache shows m-a at 1, raise m-b to 4: 4 + 4 > 6.
  const corruptedWhileInFlight = (key: 'reservations' | 'settled') =>
    [
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'nsCreate', ns: 1 }, dryRun: false }] },
      { t: 'commit', pick: 0, lose: false },
      { t: 'deliver', replica: 0, kind: 'Namespace', count: 1 },
      { t: 'deliver', replica: 1, kind: 'Namespace', count: 1 },
      { t: 'decide', reqs: [{ replica: 0, op: { t: 'quotaPut', ns: 0, q: 0, cpu: 4, mem: 1 }, dryRun: false }] },
      { t: 'corruptLedger', key },
      { t: 'decide', reqs: [{ replica: 1, op: { t: 'quotaPut', ns: 1, q: 0, cpu: 4, mem: 1 }, dryRun: false }] },
    ] as unknown as Step[];

  it.each([
    ['reservations', /data key reservations: not JSON \(/],
    ['settled', /data key settled: settled\.Namespace is 1, allowed: a resourceVersion \(decimal digits\)/],
  ] as const)(
    'an unreadable %s key: growth is refused with [Q5] naming the ConfigMap, the key and what is wrong',
    async (key, problem) => {
      const world = new World(2);
      for (const s of corruptedWhileInFlight(key)) {
        await world.run(s);
        expect(world.violation(), world.log.join('\n')).toBeUndefined();
      }
      const refused = world.log.at(-1)!;
      expect(refused, world.log.join('\n')).toMatch(
        /^replica 1: create quota m-b\/q1 cpu 4 mem 1 → project m: the headroom ledger cannot be read \(ConfigMap memory\/tenantgate-ledger-m, /,
      );
      expect(refused).toMatch(problem);
      expect(refused).toMatch(
        /until an operator repairs it \(docs\/design\.md, "An unreadable ledger"\); nothing was reserved$/,
      );
      expect(world.log.at(-3), 'replica 0 admitted m-a at 4 before').toMatch(/→ admitted$/);
    },
  );

  it('repaired as docs/design.md says (deleted once a TTL has passed), growth is decided again', async () => {
    const world = new World(2);
    const steps = [
      ...corruptedWhileInFlight('reservations'),
      { t: 'repairLedger' },
      { t: 'advance', ms: 31_000 },
      { t: 'repairLedger' },
      { t: 'decide', reqs: [{ replica: 1, op: { t: 'quotaPut', ns: 1, q: 0, cpu: 4, mem: 1 }, dryRun: false }] },
      { t: 'decide', reqs: [{ replica: 1, op: { t: 'quotaPut', ns: 1, q: 0, cpu: 2, mem: 1 }, dryRun: false }] },
    ] as unknown as Step[];
    for (const s of steps) {
      await world.run(s);
      expect(world.violation(), world.log.join('\n')).toBeUndefined();
    }
    const log = world.log.join('\n');
    expect(
      world.log.filter((l) => l.startsWith('operator: deletes')),
      'repaired once, after the TTL',
    ).toHaveLength(1);
    expect(world.log.at(-2), log).toMatch(/^replica 1: create quota m-b\/q1 cpu 4 mem 1 → .*at most 2 fits$/);
    expect(world.log.at(-1), log).toBe('replica 1: create quota m-b/q1 cpu 2 mem 1 → admitted');
  });
});
