/** Test helpers over the shared control plane: kubectl as a real user, client-node clients. */
import * as k8s from '@kubernetes/client-node';
import { execa } from 'execa';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { ClusterInfo } from './devcluster/controlplane.js';
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';

export function cluster(): ClusterInfo {
  return inject('cluster');
}

export interface KubectlOptions {
  input?: string;
  /** Do not throw on a non-zero exit. */
  reject?: boolean;
}

export interface KubectlResult {
  stdout: string;
  stderr: string;
  exitCode: number | undefined;
}

export async function kubectl(user: string, args: string[], options: KubectlOptions = {}): Promise<KubectlResult> {
  const info = cluster();
  const result = await execa(join(info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: info.kubeconfigs[user] ?? '' },
    ...(options.input !== undefined ? { input: options.input } : {}),
    reject: options.reject ?? true,
    timeout: 60_000,
    encoding: 'utf8',
  });
  return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode: result.exitCode };
}

/** One KubeConfig per kubeconfig file: a PooledKubeConfig keeps its connection per instance, so a new one per call would handshake per call. */
const loadedKubeConfigs = new Map<string, k8s.KubeConfig>();

/**
 * The user's KubeConfig, shared by every caller in this process (read-only: a test that points it
 * elsewhere loads its own with loadKubeConfig).
 */
export function kubeConfig(user = 'admin'): k8s.KubeConfig {
  const file = cluster().kubeconfigs[user]!;
  let kc = loadedKubeConfigs.get(file);
  if (!kc) loadedKubeConfigs.set(file, (kc = loadKubeConfig(file)));
  return kc;
}

let counter = 0;
/** A name unique to this run, so tests never collide on the shared control plane. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid.toString(36)}${counter.toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
}

export async function eventually<T>(
  fn: () => Promise<T>,
  { timeoutMs = 60_000, intervalMs = 250, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      return await fn();
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(
    `${what} not reached within ${timeoutMs} ms: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
  );
}

const CRD_FILE = new URL('../../manifests/crd/projects.tenantgate.io.yaml', import.meta.url).pathname;
/** The AllowList CRD: the controller's caches watch AllowLists, so it is not ready without it. */
const ALLOW_LIST_CRD_FILE = new URL('../../manifests/crd/allowlists.tenantgate.io.yaml', import.meta.url).pathname;

/** Installs the Project and AllowList CRDs from manifests/crd and waits until they are Established (idempotent). */
export async function ensureProjectCrd(): Promise<void> {
  await kubectl('admin', ['apply', '--server-side', '--force-conflicts', '-f', CRD_FILE, '-f', ALLOW_LIST_CRD_FILE]);
  await kubectl('admin', [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/projects.tenantgate.io',
    'crd/allowlists.tenantgate.io',
  ]);
}
