/** `tenantgate certs generate` writes a CA and a serving certificate and prints the caBundle. */
import { execa } from 'execa';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

describe('tenantgate certs generate (built CLI)', () => {
  it('writes a CA and a serving certificate for the webhook Service and 127.0.0.1, and prints the caBundle', async () => {
    expect(existsSync(BIN), 'run `make build` first').toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'tg-certs-'));
    const result = await execa(process.execPath, [BIN, 'certs', 'generate', '--dir', dir, '--namespace', 'platform']);
    const ca = new X509Certificate(readFileSync(join(dir, 'ca.pem')));
    const serving = new X509Certificate(readFileSync(join(dir, 'tls.pem')));
    expect(Buffer.from(result.stdout.trim(), 'base64').toString()).toBe(readFileSync(join(dir, 'ca.pem'), 'utf8'));
    expect(ca.ca).toBe(true);
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.checkHost('tenantgate-webhook.platform.svc')).toBe('tenantgate-webhook.platform.svc');
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.checkHost('evil.example')).toBeUndefined();
  });

  it("--client: a client CA, the apiserver's client certificate it signed, and the AdmissionConfiguration whose kubeconfig presents it to the webhook Service", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-certs-'));
    await execa(process.execPath, [BIN, 'certs', 'generate', '--dir', dir, '--namespace', 'platform', '--client']);
    const clientCa = new X509Certificate(readFileSync(join(dir, 'client-ca.pem')));
    const client = new X509Certificate(readFileSync(join(dir, 'apiserver-webhook-client.pem')));
    expect(clientCa.ca).toBe(true);
    expect(client.verify(clientCa.publicKey)).toBe(true);
    expect(client.verify(new X509Certificate(readFileSync(join(dir, 'ca.pem'))).publicKey)).toBe(false);
    expect(client.subject).toBe('CN=kube-apiserver-webhook-client');
    expect(client.keyUsage).toContain('1.3.6.1.5.5.7.3.2');
    const admission = parse(readFileSync(join(dir, 'admission-configuration.yaml'), 'utf8')) as {
      kind: string;
      plugins: Array<{ name: string; configuration: { kind: string; kubeConfigFile: string } }>;
    };
    expect(admission.kind).toBe('AdmissionConfiguration');
    expect(admission.plugins.map((p) => [p.name, p.configuration.kind])).toEqual([
      ['ValidatingAdmissionWebhook', 'WebhookAdmissionConfiguration'],
      ['MutatingAdmissionWebhook', 'WebhookAdmissionConfiguration'],
    ]);
    const kubeconfigFile = admission.plugins[0]!.configuration.kubeConfigFile;
    expect(isAbsolute(kubeconfigFile)).toBe(true);
    const kubeconfig = parse(readFileSync(kubeconfigFile, 'utf8')) as {
      users: Array<{ name: string; user: Record<string, string> }>;
    };
    expect(kubeconfig.users.map((u) => u.name)).toEqual(['tenantgate-webhook.platform.svc']);
    // By path, not embedded (-data): kube-apiserver re-reads named files, so the certificate rotates on disk (ADR 0034).
    expect(kubeconfig.users[0]!.user).toEqual({
      'client-certificate': join(dir, 'apiserver-webhook-client.pem'),
      'client-key': join(dir, 'apiserver-webhook-client-key.pem'),
    });
    expect(readFileSync(kubeconfig.users[0]!.user['client-certificate']!, 'utf8')).toContain('BEGIN CERTIFICATE');
    expect(readFileSync(kubeconfig.users[0]!.user['client-key']!, 'utf8')).toContain('PRIVATE KEY');
  });

  it('refuses an unknown subcommand with exit code 2; --help lists the one there is', async () => {
    const result = await execa(process.execPath, [BIN, 'certs', 'rotate'], { reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("unknown command 'rotate'");
    const help = await execa(process.execPath, [BIN, 'certs', '--help'], { reject: false });
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/generate \[options\]\s+write a CA and a serving certificate/);
  });
});
