/** The built CLI: --help on every command, --version, validated choices and integers, structured decision logs. */
import { execa } from 'execa';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { createApp, type AdmissionDecision } from '../../src/webhook/server.js';

const BIN = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');
const run = (args: string[]) => execa(process.execPath, [BIN, ...args], { reject: false, timeout: 30_000 });

describe('tenantgate --help and --version', () => {
  it.each([
    [['validate'], ['--base <ref>', '--previous <path>', '--output <format>']],
    [['render'], ['--format <format>', '--app-projects']],
    [
      ['webhook'],
      [
        '--config <file>',
        '--config-optional',
        '--kubeconfig <file>',
        '--log-level <level>',
        '--port <port>',
        '--cert <file>',
        '--key <file>',
      ],
    ],
    [
      ['controller'],
      [
        '--config <file>',
        '--kubeconfig <file>',
        '--log-level <level>',
        '--metrics-port <port>',
        '--workers <n>',
        '--delete-concurrency <n>',
        '--lease-namespace <namespace>',
        '--identity <id>',
        '--no-leader-election',
        '--project-selector <selector>',
      ],
    ],
    [
      ['certs', 'generate'],
      ['--dir <dir>', '--service <name>', '--namespace <namespace>'],
    ],
  ])('tenantgate %s --help exits 0 and lists its options', async (command, flags) => {
    const result = await run([...command, '--help']);
    expect(result.exitCode, result.stderr).toBe(0);
    for (const flag of flags) expect(result.stdout).toContain(flag);
  });

  it('--version prints the package version', async () => {
    const result = await run(['--version']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('refuses out-of-range integers and unknown choices with exit 2, naming flag, value and what is allowed', async () => {
    const workers = await run(['controller', '--workers', '0']);
    expect(workers.exitCode).toBe(2);
    expect(workers.stderr).toContain(
      `option '--workers <n>' argument '0' is invalid. "0" is not allowed: an integer from 1 to 64`,
    );
    const port = await run(['webhook', '--port', '70000']);
    expect(port.exitCode).toBe(2);
    expect(port.stderr).toContain('"70000" is not allowed: an integer from 0 to 65535');
    const level = await run(['webhook', '--log-level', 'loud']);
    expect(level.exitCode).toBe(2);
    expect(level.stderr).toContain('Allowed choices are fatal, error, warn, info, debug, trace, silent');
    const format = await run(['render', '--format', 'xml']);
    expect(format.exitCode).toBe(2);
    expect(format.stderr).toContain('Allowed choices are yaml, json');
  });
});

describe('one structured record per admission decision', () => {
  it('names uid, kind, namespace, name, user, operation, dryRun, verdict, rules and ms, and counts denials by rule', async () => {
    const snapshot = MemorySnapshot.of({
      projects: [
        {
          metadata: { name: 'shop', uid: 'u1' },
          spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'shop-admins' }] },
        },
      ],
    });
    const decisions: AdmissionDecision[] = [];
    const metrics = new WebhookMetrics();
    const app = createApp({
      config: DEFAULT_CONFIG,
      snapshot,
      ready: () => true,
      metrics,
      onDecision: (d) => decisions.push(d),
    });
    const { createServer } = await import('node:http');
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u-42',
        kind: { group: '', version: 'v1', kind: 'Namespace' },
        operation: 'CREATE',
        name: 'shop-x',
        userInfo: { username: 'mallory', groups: [] },
        object: { metadata: { name: 'shop-x' } },
        dryRun: true,
      },
    };
    await fetch(`http://127.0.0.1:${port}/validate`, {
      method: 'POST',
      body: JSON.stringify(review),
      headers: { 'content-type': 'application/json' },
    });
    server.close();
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({
      uid: 'u-42',
      path: 'validate',
      kind: 'Namespace',
      name: 'shop-x',
      user: 'mallory',
      operation: 'CREATE',
      dryRun: true,
      verdict: 'denied',
      rules: ['T4'],
      code: 403,
    });
    expect(decisions[0]!.ms).toBeGreaterThanOrEqual(0);
    expect(await metrics.registry.metrics()).toMatch(/tenantgate_webhook_denials_total\{rule="T4"\} 1/);
  });
});
