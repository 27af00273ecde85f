/**
 * The Argo CD integration in manifests/argocd/: the Project health check, run by a real Lua
 * interpreter (install it with hack/install-debian-deps.sh), and the plugin / sidecar manifests.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { PROJECT_HEALTH_CASES } from '../fixtures/lua/project-health-cases.js';
import { PACKAGE_VERSION } from '../support/package-version.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const argocd = join(root, 'manifests/argocd');
const healthScript = join(argocd, 'health-project.lua');
const harness = join(root, 'test/fixtures/lua/run-health.lua');
const LUA = process.env['LUA'] ?? 'lua5.4';

const read = (name: string): string => readFileSync(join(argocd, name), 'utf8');

/** A JS value (JSON data) as a Lua table constructor / literal, the way Argo CD hands objects to Lua. */
function toLua(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`not JSON: ${value}`);
    return String(value);
  }
  if (typeof value === 'string') {
    // Byte-wise, with decimal escapes for anything not plain printable ASCII: exact for any UTF-8.
    let out = '"';
    for (const byte of Buffer.from(value, 'utf8')) {
      out +=
        byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c
          ? String.fromCharCode(byte)
          : `\\${String(byte).padStart(3, '0')}`;
    }
    return `${out}"`;
  }
  if (Array.isArray(value)) return `{${value.map(toLua).join(', ')}}`;
  if (typeof value === 'object') {
    const fields = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => `[${toLua(k)}] = ${toLua(v)}`);
    return `{${fields.join(', ')}}`;
  }
  throw new Error(`not JSON: ${typeof value}`);
}

function runHealth(obj: unknown, script = healthScript): { status: string; message: string } {
  const r = spawnSync(LUA, [harness, script], { input: toLua(obj), encoding: 'utf8', timeout: 10_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${LUA} exited ${r.status}: ${r.stderr}`);
  const line = r.stdout.replace(/\n$/, '');
  const tab = line.indexOf('\t');
  return { status: line.slice(0, tab), message: line.slice(tab + 1) };
}

describe('Argo CD health check for Projects (Lua)', () => {
  beforeAll(() => {
    const probe = spawnSync(LUA, ['-v'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) {
      throw new Error(`${LUA} is not installed: run hack/install-debian-deps.sh (or set LUA to a Lua 5.4 interpreter)`);
    }
  });

  it.each(PROJECT_HEALTH_CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(runHealth(c.object)).toEqual(c.expected);
  });

  it('argocd-cm-patch.yaml carries exactly health-project.lua', () => {
    const cm = parse(read('argocd-cm-patch.yaml'));
    expect(cm).toMatchObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-cm', namespace: 'argocd' },
    });
    const lua = cm.data['resource.customizations.health.tenantgate.io_Project'];
    expect(lua === read('health-project.lua'), 'argocd-cm-patch.yaml and health-project.lua differ').toBe(true);
  });
});

describe('Argo CD plugin manifests', () => {
  it('plugin.yaml: ConfigManagementPlugin tenantgate, no version, generate = tenantgate render --format json .', () => {
    const plugin = parse(read('plugin.yaml'));
    expect(plugin).toMatchObject({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ConfigManagementPlugin',
      metadata: { name: 'tenantgate' },
    });
    expect(plugin.spec).not.toHaveProperty('version');
    expect(plugin.spec.generate.command).toEqual(['tenantgate', 'render', '--format', 'json', '.']);
    expect(plugin.spec.discover.find.command[0]).toBe('sh');
  });

  it('the tenantgate-cmp-plugin ConfigMap holds plugin.yaml verbatim', () => {
    const cm = parse(read('cmp-plugin-configmap.yaml'));
    expect(cm).toMatchObject({ kind: 'ConfigMap', metadata: { name: 'tenantgate-cmp-plugin' } });
    expect(cm.data['plugin.yaml'] === read('plugin.yaml'), 'cmp-plugin-configmap.yaml and plugin.yaml differ').toBe(
      true,
    );
  });

  describe('discovery command', () => {
    let dir: string;
    const discover = (cwd: string): string => {
      const [cmd, ...args] = parse(read('plugin.yaml')).spec.discover.find.command as string[];
      const r = spawnSync(cmd!, args, { cwd, encoding: 'utf8', timeout: 10_000 });
      if (r.error) throw r.error;
      return r.stdout.trim();
    };
    const write = (rel: string, text: string): void => {
      mkdirSync(join(dir, rel, '..'), { recursive: true });
      writeFileSync(join(dir, rel), text);
    };
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'tenantgate-discover-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('selects a directory with a Project, also in a multi-document file below it', () => {
      const d = join(dir, 'a');
      mkdirSync(d);
      writeFileSync(join(d, 'other.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
      mkdirSync(join(d, 'sub dir'));
      writeFileSync(
        join(d, 'sub dir', 'projects.yml'),
        'apiVersion: v1\nkind: Namespace\n---\napiVersion: tenantgate.io/v1alpha1\nkind: Project\nmetadata: {name: p}\nspec: {tenant: t}\n',
      );
      expect(discover(d)).toBe('./sub dir/projects.yml');
    });

    it('ignores directories without a tenantgate Project', () => {
      write('b/app.yaml', 'apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: x}\n');
      write('b/notes.txt', 'apiVersion: tenantgate.io/v1alpha1\nkind: Project\n');
      write('b/other-project.yaml', 'apiVersion: config.openshift.io/v1\nkind: Project\n');
      expect(discover(join(dir, 'b'))).toBe('');
    });
  });

  it('repo-server-patch.yaml adds the tenantgate-cmp sidecar running the cmp-server as UID 999', () => {
    const patch = parse(read('repo-server-patch.yaml'));
    expect(patch).toMatchObject({ kind: 'Deployment', metadata: { name: 'argocd-repo-server' } });
    const [c] = patch.spec.template.spec.containers;
    expect(c).toMatchObject({
      name: 'tenantgate-cmp',
      image: `ghcr.io/tenantgate/tenantgate:${PACKAGE_VERSION}`,
      command: ['/var/run/argocd/argocd-cmp-server'],
      securityContext: { runAsNonRoot: true, runAsUser: 999 },
    });
    const mounts = Object.fromEntries(c.volumeMounts.map((m: { name: string }) => [m.name, m]));
    expect(mounts['var-files']).toMatchObject({ mountPath: '/var/run/argocd' });
    expect(mounts['plugins']).toMatchObject({ mountPath: '/home/argocd/cmp-server/plugins' });
    expect(mounts['tenantgate-cmp-plugin']).toMatchObject({
      mountPath: '/home/argocd/cmp-server/config/plugin.yaml',
      subPath: 'plugin.yaml',
    });
    const volumes = Object.fromEntries(patch.spec.template.spec.volumes.map((v: { name: string }) => [v.name, v]));
    expect(volumes['tenantgate-cmp-plugin']).toMatchObject({ configMap: { name: 'tenantgate-cmp-plugin' } });
    expect(volumes[mounts['tenantgate-cmp-tmp']?.name]).toMatchObject({ emptyDir: {} });
  });

  it('application-example.yaml uses the plugin by name with CLUSTER=prod-eu', () => {
    const docs = parseAllDocuments(read('application-example.yaml')).map((d) => d.toJS());
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' });
    expect(docs[0].spec.source.plugin).toEqual({ name: 'tenantgate', env: [{ name: 'CLUSTER', value: 'prod-eu' }] });
  });
});
