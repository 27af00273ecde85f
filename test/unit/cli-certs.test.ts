/** `tenantgate certs generate` writes a CA and a serving certificate and prints the caBundle. */
import { execa } from 'execa';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('refuses an unknown subcommand with exit code 2; --help lists the one there is', async () => {
    const result = await execa(process.execPath, [BIN, 'certs', 'rotate'], { reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("unknown command 'rotate'");
    const help = await execa(process.execPath, [BIN, 'certs', '--help'], { reject: false });
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/generate \[options\]\s+write a CA and a serving certificate/);
  });
});
