/**
 * The shipped Deployments start: `tenantgate webhook` and `tenantgate controller` run as separate
 * processes with exactly the container args of manifests/{webhook,controller}/deployment.yaml, the shipped tenantgate-config
 * ConfigMap's file at its mount path, the $(VAR) references expanded as the kubelet does, and their
 * ServiceAccounts' tokens. Only what a pod gets from its node is replaced: file paths (the mounts), the
 * in-cluster credentials (a --kubeconfig) and the listen ports (free ones, the machine is shared).
 * Both must become ready; without their configuration file both refuse to start, with the same message.
 * The controller gets no selector from the test: what keeps it off the Projects on this shared control
 * plane is its own args' leader election, with another replica holding the lease (it stands by).
 */
import { execa } from 'execa';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse } from 'yaml';
import { generateWebhookCerts, type WebhookCertFiles } from '../../src/certs/files.js';
import { DEFAULT_LEASE_NAME } from '../../src/controller/start.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { httpsGet } from '../support/devcluster/https-get.js';
import { freePort } from '../support/devcluster/ports.js';
import { startProcess, type Managed } from '../support/devcluster/processes.js';
import { installBase, serviceAccountKubeconfigFile } from '../support/devcluster/tenantgate.js';
import { REPO_ROOT } from '../support/paths.js';
import { metricsText } from '../support/controller-kit.js';

const CLI = join(REPO_ROOT, 'dist', 'cli', 'main.js');
/** The holder of the controller's lease while this file's controller runs: another replica of the Deployment. */
const OTHER_REPLICA = 'tenantgate-controller-7d9f-other';
/** A Project of this file only, which a controller that leads would reconcile. */
const PROJECT = 'pdeployargs';
const running: Managed[] = [];
let certs: WebhookCertFiles;
let configFile: string;

interface Container {
  args: string[];
  env?: Array<{ name: string; value?: string }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}

async function container(file: string): Promise<Container> {
  const docs = parseAllDocuments(await readFile(join(REPO_ROOT, 'manifests', file), 'utf8')).map(
    (d) => d.toJS() as { kind: string; spec: { template: { spec: { containers: Container[] } } } },
  );
  const deployment = docs.find((d) => d.kind === 'Deployment')!;
  return deployment.spec.template.spec.containers[0]!;
}

/** The kubelet's $(VAR) expansion, then the mounts and ports of this machine. */
function localArgs(
  args: string[],
  env: Record<string, string>,
  paths: Record<string, string>,
  ports: Record<string, number>,
): string[] {
  return args.map((arg) => {
    let out = arg.replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => env[name] ?? `$(${name})`);
    for (const [from, to] of Object.entries(paths)) out = out.replace(from, to);
    const flag = out.match(/^--([a-z-]+)=/)?.[1];
    if (flag && ports[flag] !== undefined) out = `--${flag}=${ports[flag]}`;
    return out;
  });
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  const dir = join(info.dir, 'deployment-args');
  await mkdir(dir, { recursive: true });
  certs = await generateWebhookCerts(join(dir, 'certs'));
  const configMap = parse(await readFile(join(REPO_ROOT, 'manifests', 'config', 'tenantgate-config.yaml'), 'utf8')) as {
    data: Record<string, string>;
  };
  configFile = join(dir, 'tenantgate.yaml');
  await writeFile(configFile, configMap.data['tenantgate.yaml']!);
});

afterAll(async () => {
  for (const p of running.splice(0)) await p.stop();
  // The controllers are gone: the Project's finalizer is removed and its namespaces deleted after it.
  await removeProjects([PROJECT], { cascadeMs: 0 });
  await kubectl('admin', [
    '-n',
    'tenantgate-system',
    'delete',
    'lease',
    DEFAULT_LEASE_NAME,
    '--ignore-not-found',
  ]).catch(() => undefined);
});

describe('the shipped Deployments', () => {
  it('the webhook starts with its exact container args and becomes ready', async () => {
    const info = cluster();
    const c = await container('webhook/deployment.yaml');
    expect(c.volumeMounts?.map((m) => m.mountPath).sort()).toEqual(['/certs', '/etc/tenantgate']);
    const port = await freePort();
    const args = localArgs(
      c.args,
      {},
      { '/etc/tenantgate/tenantgate.yaml': configFile, '/certs/tls.crt': certs.cert, '/certs/tls.key': certs.key },
      { port },
    );
    const kubeconfig = await serviceAccountKubeconfigFile(info, 'tenantgate-system', 'tenantgate-webhook');
    const proc = startProcess(
      'deployment-webhook',
      process.execPath,
      [CLI, ...args, `--kubeconfig=${kubeconfig}`],
      join(info.dir, 'deployment-webhook.log'),
    );
    running.push(proc);
    const ca = await readFile(certs.caCert);
    await eventually(
      async () => {
        expect(proc.child.exitCode).toBeNull();
        expect((await httpsGet(`https://127.0.0.1:${port}/readyz`, { ca })).status).toBe(200);
      },
      { what: 'webhook ready', timeoutMs: 60_000 },
    );
    // Its log (not a terminal: JSON, as in a pod) has one record per admission decision.
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'log-me',
        kind: { group: '', version: 'v1', kind: 'Namespace' },
        operation: 'CREATE',
        name: 'nowhere',
        userInfo: { username: 'dave', groups: ['tenants'] },
        object: { metadata: { name: 'nowhere' } },
      },
    };
    await new Promise<void>((resolve, reject) => {
      const req = request(
        `https://127.0.0.1:${port}/validate`,
        { method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json' } },
        (res) => res.resume().on('end', resolve),
      );
      req.on('error', reject);
      req.end(JSON.stringify(review));
    });
    const record = await eventually(
      async () => {
        const lines = (await readFile(proc.logFile, 'utf8')).split('\n').filter((l) => l.startsWith('{'));
        const found = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.uid === 'log-me');
        expect(found).toBeDefined();
        return found!;
      },
      { what: 'decision record in the log' },
    );
    expect(record).toMatchObject({
      level: 30,
      component: 'webhook',
      msg: 'admission decision',
      kind: 'Namespace',
      name: 'nowhere',
      user: 'dave',
      operation: 'CREATE',
      dryRun: false,
      verdict: 'denied',
      rules: ['T6'],
      code: 403,
    });
  });

  it('the controller starts with its exact container args, becomes ready, and follows their lease: a standby while another replica holds it touches no Project', async () => {
    const info = cluster();
    const c = await container('controller/deployment.yaml');
    const env = { POD_NAME: 'tenantgate-controller-7d9f-abcde', POD_NAMESPACE: 'tenantgate-system' };
    const metrics = await freePort();
    const probes = await freePort();
    // /metrics is served with the mounted serving certificate (the webhook's Secret in the chart).
    const args = localArgs(
      c.args,
      env,
      { '/etc/tenantgate/tenantgate.yaml': configFile, '/certs/tls.crt': certs.cert, '/certs/tls.key': certs.key },
      { 'metrics-port': metrics, 'probe-port': probes },
    );
    expect(args).toContain('--identity=tenantgate-controller-7d9f-abcde');
    expect(args).toContain('--lease-namespace=tenantgate-system');
    expect(args.some((a) => a.startsWith('--project-selector') || a === '--no-leader-election')).toBe(false);
    // Another replica of the Deployment holds the lease the args name (tenantgate-system/tenantgate-controller,
    // the default name) for the whole test: with exactly these args the process must stand by.
    await kubectl('admin', ['-n', 'tenantgate-system', 'delete', 'lease', DEFAULT_LEASE_NAME, '--ignore-not-found']);
    const now = new Date().toISOString().replace(/Z$/, '000Z');
    await kubectl('admin', ['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: DEFAULT_LEASE_NAME, namespace: 'tenantgate-system' },
        spec: {
          holderIdentity: OTHER_REPLICA,
          leaseDurationSeconds: 3600,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: 0,
        },
      }),
    });
    // A Project any leader would reconcile at once (finalizer, status): with these args it stays as created.
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: PROJECT },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
          quota: { hard: { 'requests.cpu': '1', pods: '5' } },
        },
      }),
    });
    const kubeconfig = await serviceAccountKubeconfigFile(info, 'tenantgate-system', 'tenantgate-controller');
    // The Deployment's args exactly; nothing added but the kubeconfig a pod gets from its node.
    const proc = startProcess(
      'deployment-controller',
      process.execPath,
      [CLI, ...args, `--kubeconfig=${kubeconfig}`],
      join(info.dir, 'deployment-controller.log'),
    );
    running.push(proc);
    await eventually(
      async () => {
        expect(proc.child.exitCode).toBeNull();
        expect((await fetch(`http://127.0.0.1:${probes}/readyz`)).status).toBe(200);
      },
      { what: 'controller ready', timeoutMs: 60_000 },
    );
    // It campaigned for that lease under its pod name, found it held and stood by.
    const records = await eventually(
      async () => {
        const lines = (await readFile(proc.logFile, 'utf8'))
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { msg?: string; identity?: string });
        expect(lines.map((r) => r.msg)).toContain(
          `not leader: lease tenantgate-system/${DEFAULT_LEASE_NAME} held by ${OTHER_REPLICA}; standing by`,
        );
        return lines;
      },
      { what: 'the controller standing by', timeoutMs: 30_000 },
    );
    const standingBy = records.find((r) => r.msg?.startsWith('not leader:'))!;
    expect(standingBy.identity).toBe('tenantgate-controller-7d9f-abcde');
    await new Promise((r) => setTimeout(r, 3000));
    // As Prometheus scrapes it: HTTPS verified with the certificate's CA, a token allowed to get /metrics (admin's).
    const scraped = await metricsText({
      port: metrics,
      token: info.tokens.admin!,
      ca: await readFile(certs.caCert, 'utf8'),
    });
    expect(scraped).toMatch(/^tenantgate_controller_leader 0$/m);
    const writes = scraped
      .split('\n')
      .filter(
        (l) =>
          l.startsWith('tenantgate_controller_api_writes_total{') && !/resource="leases"/.test(l) && !l.endsWith(' 0'),
      );
    expect(writes, 'a standby writes nothing but (attempts at) the lease').toEqual([]);
    const lease = JSON.parse(
      (await kubectl('admin', ['-n', 'tenantgate-system', 'get', 'lease', DEFAULT_LEASE_NAME, '-o', 'json'])).stdout,
    ) as { spec: { holderIdentity?: string } };
    expect(lease.spec.holderIdentity).toBe(OTHER_REPLICA);
    const project = JSON.parse((await kubectl('admin', ['get', 'project', PROJECT, '-o', 'json'])).stdout) as {
      metadata: { finalizers?: string[] };
      status?: unknown;
    };
    expect(project.metadata.finalizers, `${PROJECT} not reconciled by a standby`).toBeUndefined();
    expect(project.status).toBeUndefined();
  });

  it('without the configuration file, both refuse to start with the same clear error', async () => {
    const missing = join(cluster().dir, 'deployment-args', 'absent', 'tenantgate.yaml');
    for (const command of ['webhook', 'controller']) {
      const result = await execa(process.execPath, [CLI, command, `--config=${missing}`], {
        reject: false,
        timeout: 30_000,
      });
      expect(result.exitCode, command).not.toBe(0);
      expect(result.stderr, command).toContain(
        `--config ${missing}: no such file; mount the tenantgate-config ConfigMap there, or pass --config-optional to run with the built-in defaults`,
      );
    }
  });
});
