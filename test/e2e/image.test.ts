/**
 * The container image from `make image` (hack/build-image.sh, ADR 0010), unpacked and run from its
 * own root filesystem, read-only, as the image's non-root user: --version, the Argo CD plugin's
 * discover and generate commands on examples/gitops (as Argo CD's UID 999), and the webhook and the
 * controller serving /readyz against the test control plane. The build runs twice to show that the
 * digest is reproducible.
 */
import { execa, type ResultPromise } from 'execa';
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { kubeconfigYaml } from '../support/devcluster/controlplane.js';
import { httpsGet } from '../support/devcluster/https-get.js';
import { freePort } from '../support/devcluster/ports.js';
import { installBase, MANIFESTS, registerWebhooks, unregisterWebhooks } from '../support/devcluster/tenantgate.js';
import { REPO_ROOT } from '../support/paths.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { getMetrics, metricsText } from '../support/controller-kit.js';
import { runInImage, startInImage, unpackImage, type UnpackedImage } from '../support/oci-image.js';

const BUILD_TIMEOUT = 600_000;
let work: string;
let image: UnpackedImage;
let archive: string;
let firstDigest: string;

async function buildImage(
  env: Record<string, string> = {},
): Promise<{ archive: string; digest: string; stderr: string }> {
  // One SOURCE_DATE_EPOCH for every build, as a release build would pin it.
  const result = await execa(join(REPO_ROOT, 'hack', 'build-image.sh'), [], {
    cwd: REPO_ROOT,
    env: { SOURCE_DATE_EPOCH: '1767225600', ...env },
    timeout: BUILD_TIMEOUT,
  });
  return {
    archive: result.stdout.trim().split('\n').at(-1)!,
    digest: (await readFile(join(REPO_ROOT, 'build', 'image', 'digest'), 'utf8')).trim(),
    stderr: String(result.stderr),
  };
}

beforeAll(async () => {
  if (process.getuid?.() !== 0)
    throw new Error('the image test unpacks and chroots into the image: it needs root (CI runs as root)');
  work = await mkdtemp(join(tmpdir(), 'tenantgate-image-'));
  const built = await buildImage();
  firstDigest = built.digest;
  archive = join(work, 'tenantgate.oci.tar');
  await cp(built.archive, archive);
  image = await unpackImage(archive, join(work, 'image'));
  process.stderr.write(
    `[image] ${image.name} ${image.manifestDigest}: archive ${((await readFile(archive)).length / 2 ** 20).toFixed(1)} MiB, ` +
      `layers ${(image.compressedBytes / 2 ** 20).toFixed(1)} MiB compressed, ${(image.unpackedBytes / 2 ** 20).toFixed(1)} MiB unpacked\n`,
  );
}, BUILD_TIMEOUT);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/**
 * The variables a Dockerfile stage's ENV instructions set, as NAME=value (continuation lines joined).
 * Only the unquoted `ENV NAME=value …` form: anything else fails, so a new form needs this parser first.
 */
function dockerfileEnv(stage: string): string[] {
  const instructions = stage
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => /^ENV\s/.test(line));
  expect(instructions.length, 'the final stage has an ENV instruction').toBeGreaterThan(0);
  return instructions.flatMap((line) =>
    line
      .replace(/^ENV\s+/, '')
      .trim()
      .split(/\s+/)
      .map((pair) => {
        expect(pair, 'ENV NAME=value (unquoted)').toMatch(/^[A-Za-z_][A-Za-z0-9_]*=[^"'\s]*$/);
        return pair;
      }),
  );
}

describe('the image', () => {
  it('is tagged as the manifests reference it and runs as 65532 with tenantgate as entrypoint', async () => {
    const docs = parseAllDocuments(await readFile(join(MANIFESTS, 'webhook', 'deployment.yaml'), 'utf8')).map(
      (d) => d.toJS() as { kind: string; spec: { template: { spec: { containers: Array<{ image: string }> } } } },
    );
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    expect(image.name).toBe(deployment.spec.template.spec.containers[0]!.image);
    expect(image.config.User).toBe('65532:65532');
    expect(image.config.Entrypoint).toEqual(['/usr/local/bin/tenantgate']);
  });

  it('is what the Dockerfile declares: entrypoint, user, environment, Node and kustomize versions', async () => {
    const dockerfile = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(finalStage).toMatch(/^FROM scratch$/m);
    expect(JSON.parse(/^ENTRYPOINT (.+)$/m.exec(finalStage)![1]!)).toEqual(image.config.Entrypoint);
    expect(/^USER (\S+)$/m.exec(finalStage)![1]).toBe(image.config.User);
    // The environment both ways: every variable the final stage's ENV sets, and nothing else.
    expect([...image.config.Env].sort()).toEqual(dockerfileEnv(finalStage).sort());
    const buildScript = await readFile(join(REPO_ROOT, 'hack', 'build-image.sh'), 'utf8');
    const kustomizeScript = await readFile(join(REPO_ROOT, 'hack', 'install-kustomize.sh'), 'utf8');
    expect(/^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile)![1]).toBe(/^NODE_VERSION=(\S+)$/m.exec(buildScript)![1]);
    expect(/^ARG KUSTOMIZE_VERSION=(\S+)$/m.exec(dockerfile)![1]).toBe(/^version=(\S+)/m.exec(kustomizeScript)![1]);
    const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(dockerfile).toContain(`org.opencontainers.image.version=${version}`);
    for (const shared of ['image/debian-packages.lock', 'image/finish-rootfs.sh', 'image/prune-node-modules.sh'])
      expect(dockerfile).toContain(shared);
  });

  it('runs `tenantgate --version` read-only as 65532 and as Argo CD’s 999', async () => {
    const version = (JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string })
      .version;
    expect((await runInImage(image, ['--version'])).stdout.trim()).toBe(version);
    expect((await runInImage(image, ['--version'], { user: '999:999' })).stdout.trim()).toBe(version);
  });

  it('really is read-only: even root cannot write to the root filesystem', async () => {
    const write = await runInImage(image, ['-c', 'echo x > /opt/probe'], {
      user: '0:0',
      entrypoint: ['/bin/sh'],
      reject: false,
    });
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toMatch(/Read-only file system/);
  });

  it('runs the Argo CD plugin’s discover and generate commands on examples/gitops as UID 999', async () => {
    const plugin = parse(await readFile(join(MANIFESTS, 'argocd', 'plugin.yaml'), 'utf8')) as {
      spec: { generate: { command: string[] }; discover: { find: { command: string[] } } };
    };
    const repo = join(work, 'repo');
    await cp(join(REPO_ROOT, 'examples', 'gitops'), repo, { recursive: true });
    await execa('chmod', ['-R', 'a+rX', repo]);
    const discover = await runInImage(image, [], {
      user: '999:999',
      mountRun: repo,
      cwd: '/run',
      entrypoint: plugin.spec.discover.find.command,
    });
    expect(discover.stdout.trim()).toMatch(/\.yaml$/);

    const env = { ARGOCD_ENV_CLUSTER: 'prod-eu' };
    const generated = await runInImage(image, [], {
      user: '999:999',
      mountRun: repo,
      cwd: '/run',
      entrypoint: plugin.spec.generate.command,
      env,
    });
    const onHost = await execa(
      process.execPath,
      [join(REPO_ROOT, 'dist', 'cli', 'main.js'), 'render', '--format', 'json', '.'],
      { cwd: repo, env },
    );
    expect(generated.stdout).toContain('"kind":"Project"');
    expect(generated.stdout).toBe(onHost.stdout);
  });

  it('renders a kustomize directory with the kustomize it ships, as UID 999', async () => {
    const repo = join(work, 'kustomized');
    await cp(join(REPO_ROOT, 'examples', 'gitops'), repo, { recursive: true });
    await writeFile(
      join(repo, 'kustomization.yaml'),
      'resources: [acme.yaml]\ncommonLabels: {platform.example/owner: tenancy}\n',
    );
    await execa('chmod', ['-R', 'a+rX', repo]);
    const generated = await runInImage(image, ['render', '--format', 'json', '.'], {
      user: '999:999',
      mountRun: repo,
      cwd: '/run',
    });
    const kustomize = (await execa(join(REPO_ROOT, 'hack', 'install-kustomize.sh'))).stdout.trim().split('\n').at(-1)!;
    const onHost = await execa(
      process.execPath,
      [join(REPO_ROOT, 'dist', 'cli', 'main.js'), 'render', '--format', 'json', '.'],
      { cwd: repo, env: { TENANTGATE_KUSTOMIZE: kustomize } },
    );
    expect(generated.stdout).toContain('"platform.example/owner":"tenancy"');
    // Only what the kustomization lists: acme's projects, not globex's.
    expect(generated.stdout).toContain('"tenant":"acme"');
    expect(generated.stdout).not.toContain('"tenant":"globex"');
    expect(generated.stdout).toBe(onHost.stdout);
  });
});

/** The shipped configuration (manifests/config), as the ConfigMap mount gives it to the containers. */
async function shippedConfig(file: string): Promise<void> {
  const configMap = parse(await readFile(join(MANIFESTS, 'config', 'tenantgate-config.yaml'), 'utf8')) as {
    data: Record<string, string>;
  };
  await writeFile(file, configMap.data['tenantgate.yaml']!, { mode: 0o644 });
}

/** A kubeconfig for one of tenantgate's ServiceAccounts, readable inside the image. */
async function serviceAccountKubeconfig(file: string, serviceAccount: string): Promise<void> {
  const info = cluster();
  const token = (
    await kubectl('admin', ['-n', 'tenantgate-system', 'create', 'token', serviceAccount, '--duration=1h'])
  ).stdout.trim();
  await writeFile(
    file,
    kubeconfigYaml(
      info.server,
      await readFile(info.caFile, 'utf8'),
      `system:serviceaccount:tenantgate-system:${serviceAccount}`,
      token,
    ),
    { mode: 0o644 },
  );
}

describe('the image against the control plane', () => {
  let webhook: ResultPromise | undefined;
  let controller: ResultPromise | undefined;
  let webhookUrl: string | undefined;
  let webhookCerts: Awaited<ReturnType<typeof generateWebhookCerts>> | undefined;
  afterAll(async () => {
    await unregisterWebhooks(cluster());
    await kubectl('admin', ['delete', 'project', 'pimage', '--ignore-not-found', '--wait=false']).catch(
      () => undefined,
    );
    for (const child of [webhook, controller]) {
      child?.kill('SIGTERM');
      await child?.catch(() => undefined);
    }
  });

  it('serves /readyz from the webhook once its caches are synced', async () => {
    await installBase(cluster());
    const run = join(work, 'webhook-run');
    const certs = await generateWebhookCerts(join(run, 'certs'));
    await serviceAccountKubeconfig(join(run, 'kubeconfig'), 'tenantgate-webhook');
    await shippedConfig(join(run, 'tenantgate.yaml'));
    await execa('chmod', ['-R', 'a+rX', run]);
    await chmod(certs.key, 0o644);
    const port = await freePort();
    webhook = startInImage(
      image,
      [
        'webhook',
        '--config=/run/tenantgate.yaml',
        '--kubeconfig=/run/kubeconfig',
        '--cert=/run/certs/tls.pem',
        '--key=/run/certs/tls-key.pem',
        `--port=${port}`,
        '--host=127.0.0.1',
      ],
      { mountRun: run, reject: false, timeoutMs: 300_000 },
    );
    const ca = await readFile(certs.caCert);
    const exited = webhook.then((r) => {
      throw new Error(`the webhook exited with ${r.exitCode}: ${String(r.stderr)}`);
    });
    const ready = await Promise.race([
      exited,
      eventually(
        async () => {
          const response = await httpsGet(`https://127.0.0.1:${port}/readyz`, { ca });
          if (response.status !== 200) throw new Error(`/readyz ${response.status}: ${response.body}`);
          return response;
        },
        { timeoutMs: 120_000, what: 'webhook /readyz from the image' },
      ),
    ]);
    // Stopping the webhook in afterAll settles `exited` too; that is not a failure.
    exited.catch(() => undefined);
    expect(ready.status).toBe(200);
    webhookUrl = `https://127.0.0.1:${port}`;
    webhookCerts = certs;
  }, 180_000);

  it("judges real admissions once registered: a tenant's namespace in another tenant's project is denied with the rule id, the owner's is admitted and mutated", async () => {
    expect(webhookUrl, 'the webhook from the image is running').toBeDefined();
    await registerWebhooks(cluster(), webhookUrl!, webhookCerts!.caBundle);
    const project = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: 'pimage', labels: { 'tenantgate.io/image-test': 'yes' } },
      spec: {
        tenant: 'acme',
        owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
        quota: { hard: { 'requests.cpu': '2', pods: '20' } },
        namespaceDefaults: { quota: { hard: { 'requests.cpu': '500m', pods: '5' } } },
      },
    };
    // Through the image's webhook: a Project by admin (privileged) is admitted.
    await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project) });
    // bob is not an owner of pimage: the image's webhook denies, naming the rule.
    const denied = await eventually(
      async () => {
        const r = await kubectl('bob', ['create', 'namespace', 'pimage-bob', '--dry-run=server'], { reject: false });
        expect(r.stderr).toMatch(/\[T4\]/); // also waits for the image's cache to hold pimage
        return r;
      },
      { timeoutMs: 60_000, what: "the image's webhook knows pimage" },
    );
    expect(denied.exitCode).not.toBe(0);
    expect(denied.stderr).toContain('admission webhook');
    expect(
      (await kubectl('admin', ['get', 'namespace', 'pimage-bob', '--ignore-not-found', '-o', 'name'])).stdout,
    ).toBe('');
    // alice owns it: admitted, and the image's mutating webhook labelled it for its project.
    const created = await kubectl('alice', ['create', 'namespace', 'pimage-a'], { reject: false });
    expect(created.exitCode, created.stderr).toBe(0);
    const ns = JSON.parse((await kubectl('admin', ['get', 'namespace', 'pimage-a', '-o', 'json'])).stdout) as {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
    };
    const uid = JSON.parse((await kubectl('admin', ['get', 'project', 'pimage', '-o', 'json'])).stdout).metadata
      .uid as string;
    expect(ns.metadata.labels).toMatchObject({
      'tenantgate.io/project': 'pimage',
      'tenantgate.io/tenant': 'acme',
      'pod-security.kubernetes.io/enforce': 'baseline',
    });
    expect(ns.metadata.annotations?.['tenantgate.io/project-uid']).toBe(uid);
  }, 180_000);

  it('runs the controller, ready once its caches are synced', async () => {
    await installBase(cluster());
    const run = join(work, 'controller-run');
    await mkdir(run, { recursive: true });
    await serviceAccountKubeconfig(join(run, 'kubeconfig'), 'tenantgate-controller');
    await shippedConfig(join(run, 'tenantgate.yaml'));
    const port = await freePort();
    const probes = await freePort();
    // No lease and a selector no Project matches: the other tests' Projects stay untouched.
    controller = startInImage(
      image,
      [
        'controller',
        '--config=/run/tenantgate.yaml',
        '--kubeconfig=/run/kubeconfig',
        `--metrics-port=${port}`,
        '--metrics-host=127.0.0.1',
        `--probe-port=${probes}`,
        '--probe-host=127.0.0.1',
        '--no-leader-election',
        '--project-selector=tenantgate.io/image-test=none',
      ],
      { mountRun: run, reject: false, timeoutMs: 300_000 },
    );
    const exited = controller.then((r) => {
      throw new Error(`the controller exited with ${r.exitCode}: ${String(r.stderr)}`);
    });
    const status = await Promise.race([
      exited,
      eventually(
        async () => {
          const response = await fetch(`http://127.0.0.1:${probes}/readyz`);
          if (response.status !== 200) throw new Error(`/readyz ${response.status}: ${await response.text()}`);
          return response.status;
        },
        { timeoutMs: 120_000, what: 'controller /readyz from the image' },
      ),
    ]);
    exited.catch(() => undefined);
    expect(status).toBe(200);
    // /metrics over HTTPS (a certificate the image made at start: not verified here), for an allowed token only.
    expect((await getMetrics({ port })).status).toBe(401);
    expect(await metricsText({ port, token: cluster().tokens.admin! })).toMatch(/^# HELP /m);
  }, 180_000);

  it('the controller from the image reconciles a Project (finalizer, status, the owners’ binding and default quota) and cascades its deletion', async () => {
    const run = join(work, 'controller-run-2');
    await mkdir(run, { recursive: true });
    await serviceAccountKubeconfig(join(run, 'kubeconfig'), 'tenantgate-controller');
    await shippedConfig(join(run, 'tenantgate.yaml'));
    const port = await freePort();
    const probes = await freePort();
    // Only the Project this file labelled: the other tests' Projects stay untouched.
    const reconciling = startInImage(
      image,
      [
        'controller',
        '--config=/run/tenantgate.yaml',
        '--kubeconfig=/run/kubeconfig',
        `--metrics-port=${port}`,
        '--metrics-host=127.0.0.1',
        `--probe-port=${probes}`,
        '--probe-host=127.0.0.1',
        '--no-leader-election',
        '--project-selector=tenantgate.io/image-test=yes',
      ],
      { mountRun: run, reject: false, timeoutMs: 300_000 },
    );
    try {
      expect(
        (await kubectl('admin', ['get', 'namespace', 'pimage-a', '-o', 'name'])).stdout.trim(),
        'the namespace alice created through the image webhook',
      ).toBe('namespace/pimage-a');
      const project = await eventually(
        async () => {
          const p = JSON.parse((await kubectl('admin', ['get', 'project', 'pimage', '-o', 'json'])).stdout) as {
            metadata: { finalizers?: string[] };
            status?: { phase?: string; namespaceCount?: number };
          };
          expect(p.metadata.finalizers).toContain('tenantgate.io/cascade-delete');
          expect(p.status?.phase).toBe('Active');
          return p;
        },
        { timeoutMs: 60_000, what: 'pimage reconciled by the controller from the image' },
      );
      expect(project.status?.namespaceCount).toBe(1);
      await eventually(
        async () => {
          await kubectl('admin', ['-n', 'pimage-a', 'get', 'rolebinding', 'tenantgate-owners']);
          await kubectl('admin', ['-n', 'pimage-a', 'get', 'resourcequota', 'tenantgate-quota']);
        },
        { timeoutMs: 60_000, what: "pimage-a's owners binding and default quota" },
      );
      await kubectl('admin', ['delete', 'project', 'pimage', '--wait=false']);
      await eventually(
        async () => {
          expect(
            (await kubectl('admin', ['get', 'namespace', 'pimage-a', '--ignore-not-found', '-o', 'name'])).stdout,
          ).toBe('');
          expect(
            (await kubectl('admin', ['get', 'project', 'pimage', '--ignore-not-found', '-o', 'name'])).stdout,
          ).toBe('');
        },
        { timeoutMs: 120_000, what: 'pimage and its namespace deleted by the cascade' },
      );
    } finally {
      reconciling.kill('SIGTERM');
      await reconciling.catch(() => undefined);
    }
  }, 300_000);
});

describe('reproducibility', () => {
  it(
    'a second build of the same inputs has the same digest',
    async () => {
      const second = await buildImage();
      expect(second.digest).toBe(firstDigest);
      expect(second.digest).toBe(image.manifestDigest);
    },
    BUILD_TIMEOUT,
  );

  it(
    'a lock whose pinned version the mirror no longer has: the build says so, resolves the package list and rewrites the lock',
    async () => {
      const lock = join(work, 'stale.lock');
      const real = await readFile(join(REPO_ROOT, 'image', 'debian-packages.lock'), 'utf8');
      // As after a Debian point release: one pin names a version the mirror dropped.
      const stale = real.replace(/^coreutils=.*$/m, 'coreutils=0.0-dropped1');
      expect(stale).not.toBe(real);
      await writeFile(lock, stale);
      const built = await buildImage({ DEBIAN_LOCK: lock });
      expect(built.stderr).toMatch(/WARNING: a version pinned in .*stale\.lock is no longer on/);
      expect(built.stderr).toMatch(/wrote .*stale\.lock/);
      const rewritten = (await readFile(lock, 'utf8')).split('\n').filter((l) => l && !l.startsWith('#'));
      const resolved = (await readFile(join(REPO_ROOT, 'build', 'image', 'debian-packages.txt'), 'utf8'))
        .split('\n')
        .filter(Boolean);
      expect(rewritten).toEqual(resolved);
      expect(rewritten.find((l) => l.startsWith('coreutils='))).not.toBe('coreutils=0.0-dropped1');
    },
    BUILD_TIMEOUT,
  );
});
