/**
 * The Project health check run by the real Argo CD: `argocd admin settings resource-overrides
 * health` with our argocd-cm for every status fixture, offline, so gopher-lua (Lua 5.1 with Argo CD's
 * libraries and timeout) checks the script as well as Lua 5.4 in the unit test.
 */
import { execa } from 'execa';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { PROJECT_HEALTH_CASES } from '../fixtures/lua/project-health-cases.js';
import { argoCdBinary, argoCdConfigMap } from '../support/argocd.js';

let dir: string;
let cmPath: string;

async function argoCdHealth(
  object: Record<string, unknown>,
  name: string,
): Promise<{ status: string; message: string }> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, stringify(object));
  const r = await execa(
    argoCdBinary(),
    ['admin', 'settings', 'resource-overrides', 'health', file, '--argocd-cm-path', cmPath],
    {
      env: { ARGOCD_BINARY_NAME: 'argocd', HOME: dir },
      timeout: 60_000,
    },
  );
  // The command's own logs (JSON lines) share stdout with the result.
  const result = r.stdout
    .split('\n')
    .filter((line) => !line.startsWith('{"level":'))
    .join('\n');
  const match = /^STATUS: (.*)\nMESSAGE: ([\s\S]*?)\n*$/.exec(result);
  if (!match)
    throw new Error(`unexpected output of argocd admin settings resource-overrides health:\n${r.stdout}\n${r.stderr}`);
  return { status: match[1]!, message: match[2]! };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tg-argocd-health-'));
  cmPath = join(dir, 'argocd-cm.yaml');
  await writeFile(cmPath, stringify(argoCdConfigMap()));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('Project health by the real Argo CD (argocd admin settings resource-overrides health)', () => {
  it.each(PROJECT_HEALTH_CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_name, c, i) => {
    expect(await argoCdHealth(c.object, `case-${i}`)).toEqual(c.expected);
  });

  it('without the health check Argo CD has no opinion on Projects (the cases above are ours)', async () => {
    await writeFile(cmPath, stringify({ ...argoCdConfigMap(), data: {} }));
    try {
      const file = join(dir, 'plain.yaml');
      await writeFile(file, stringify(PROJECT_HEALTH_CASES[0]!.object));
      const r = await execa(
        argoCdBinary(),
        ['admin', 'settings', 'resource-overrides', 'health', file, '--argocd-cm-path', cmPath],
        { env: { ARGOCD_BINARY_NAME: 'argocd', HOME: dir } },
      );
      expect(r.stdout).toContain("Health script is not configured for 'tenantgate.io/Project'");
    } finally {
      await writeFile(cmPath, stringify(argoCdConfigMap()));
    }
  });
});
