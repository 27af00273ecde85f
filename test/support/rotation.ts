/**
 * Certificate rotation under traffic (docs/adr/0034-certificates-and-client-identity.md): what the rotation tests
 * share — the serial a fresh TLS handshake gets, a pair written in place the way a Secret volume update
 * lands, steady traffic started at a fixed rate whose every outcome is kept, and the tenant's call that
 * traffic makes with the Project it runs against.
 */
import { X509Certificate } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import type { KeyPair } from '../../src/certs/pki.js';
import type { SnapshotSource } from '../../src/webhook/start.js';
import { eventually } from './cluster.js';
import type { ClusterInfo } from './devcluster/controlplane.js';
import { applyOwnerBindings } from './devcluster/tenantgate.js';
import { twoNamespaceProject } from './fixtures.js';

/** The serial (lower-case hex) of the certificate a new TLS connection to host:port is served. */
export function servedSerial(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, rejectUnauthorized: false }, () => {
      const serial = socket.getPeerCertificate().serialNumber.toLowerCase();
      socket.end();
      resolve(serial);
    });
    socket.on('error', reject);
  });
}

export const serialOf = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();

/** base64 of PEM certificates, as a caBundle field holds them. */
export const caBundleOf = (...pems: string[]) => Buffer.from(pems.join('')).toString('base64');

/** Writes a file beside `path` and renames it into place (a reader never sees it half-written). */
export async function replaceFile(path: string, text: string): Promise<void> {
  await writeFile(`${path}.rotating`, text, { mode: 0o600 });
  await rename(`${path}.rotating`, path);
}

/** Replaces a serving pair: key first, then certificate (between the two the server keeps the old pair). */
export async function replacePair(files: { cert: string; key: string }, pair: KeyPair): Promise<void> {
  await replaceFile(files.key, pair.keyPem);
  await replaceFile(files.cert, pair.certPem);
}

/** Runs kubectl as `user`; answers (does not throw) on a non-zero exit. */
export type KubectlAs = (
  user: string,
  args: string[],
  input?: string,
) => Promise<{ exitCode?: number; stderr: string }>;

/**
 * carol's call at step i against the Project `project` (twoNamespaceProject in fixtures.ts, with
 * carol's namespace `<project>-one` created): even, a label on her namespace (admitted); odd, a dry-run
 * namespace past the budget (refused, [Q1]). `ok` when the verdict is the expected one.
 */
export function tenantCallFor(
  kubectl: KubectlAs,
  project: string,
): (i: number) => Promise<{ ok: boolean; detail: string }> {
  return async (i) => {
    if (i % 2 === 0) {
      const r = await kubectl('carol', ['label', 'namespace', `${project}-one`, `tick=${i}`, '--overwrite']);
      return { ok: r.exitCode === 0, detail: `label: exit ${r.exitCode} ${r.stderr}` };
    }
    const r = await kubectl('carol', ['create', 'namespace', `${project}-extra`, '--dry-run=server']);
    return {
      ok: r.exitCode !== 0 && r.stderr.includes('[Q1]'),
      detail: `create past budget: exit ${r.exitCode} ${r.stderr}`,
    };
  };
}

/**
 * The Project the tenant calls run against (twoNamespaceProject `project`), applied through the apiserver
 * once the webhook is registered: waits for the webhook's cache to hold it, creates carol's namespaces
 * `<project>-one` and `<project>-two`, the owners' RoleBindings (no controller runs in these tests), and
 * waits until carol's call gets its verdict.
 */
export async function seedTenantProject(
  info: ClusterInfo,
  cache: SnapshotSource,
  kubectl: KubectlAs,
  project: string,
): Promise<void> {
  const object = twoNamespaceProject(project);
  const applied = await kubectl('admin', ['apply', '-f', '-'], JSON.stringify(object));
  if (applied.exitCode !== 0)
    throw new Error(`applying Project ${project}: exit ${applied.exitCode} ${applied.stderr}`);
  await eventually(
    async () => {
      if (!cache.snapshot.project(project)) throw new Error(`Project ${project} not in the webhook's cache`);
    },
    { what: 'the project in the cache' },
  );
  const namespaces = [`${project}-one`, `${project}-two`];
  for (const name of namespaces) {
    const r = await kubectl('carol', ['create', 'namespace', name]);
    if (r.exitCode !== 0) throw new Error(`carol creating namespace ${name}: exit ${r.exitCode} ${r.stderr}`);
  }
  await applyOwnerBindings(info, object, namespaces);
  const call = tenantCallFor(kubectl, project);
  await eventually(
    async () => {
      const r = await call(0);
      if (!r.ok) throw new Error(r.detail);
    },
    { what: 'carol may label her namespace' },
  );
}

export interface Outcome {
  step: string;
  ok: boolean;
  detail: string;
}

/**
 * Starts `operation` every `intervalMs` (not waiting for the previous one, at most `maxInFlight` at a
 * time) until stopped; every outcome is kept with the step that was current when it started.
 */
export class SteadyTraffic {
  readonly outcomes: Outcome[] = [];
  private step = 'before';
  private timer: NodeJS.Timeout | undefined;
  private inFlight = new Set<Promise<void>>();
  private started = 0;

  constructor(
    private readonly operation: (i: number) => Promise<{ ok: boolean; detail: string }>,
    private readonly intervalMs = 400,
    private readonly maxInFlight = 4,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.inFlight.size >= this.maxInFlight) return;
      const step = this.step;
      const i = this.started++;
      const p: Promise<void> = this.operation(i)
        .then(
          (r) => void this.outcomes.push({ step, ...r }),
          (err: unknown) => void this.outcomes.push({ step, ok: false, detail: String(err) }),
        )
        .finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }, this.intervalMs);
  }

  /** Starts a step: later operations are counted under it. */
  enter(step: string): void {
    this.step = step;
  }

  /** Resolves once `n` operations started in the current step have finished (a condition, not a time). */
  async finishedInStep(n: number): Promise<void> {
    const step = this.step;
    while (this.outcomes.filter((o) => o.step === step).length < n)
      await Promise.race([...this.inFlight, new Promise((r) => setTimeout(r, 100))]);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all([...this.inFlight]);
  }

  failures(): Outcome[] {
    return this.outcomes.filter((o) => !o.ok);
  }
}
