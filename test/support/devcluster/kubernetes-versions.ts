/**
 * The Kubernetes minors tenantgate supports (ADR 0046) and where their control planes are built: the
 * newest from test/cluster/gobuild, the oldest from test/cluster/gobuild-<minor> (kube-apiserver,
 * kube-controller-manager and kubectl of that release; etcd is the pinned one, shared).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../paths.js';
import { findBinDir } from './controlplane.js';

/** The oldest supported minor's wrapper module (its go.mod pins the release). */
export const OLDEST_SUPPORTED_MODULE = join(REPO_ROOT, 'test', 'cluster', 'gobuild-1.32');

export interface KubernetesBuild {
  /** e.g. v1.32.13 */
  version: string;
  binDir: string;
  etcdBinDir: string;
}

/** The release a wrapper module pins (its `k8s.io/kubernetes` requirement). */
export function pinnedVersion(moduleDir: string): string {
  const gomod = readFileSync(join(moduleDir, 'go.mod'), 'utf8');
  const found = /^\s*(?:require\s+)?k8s\.io\/kubernetes\s+(v\d+\.\d+\.\d+)\s*$/m.exec(gomod);
  if (!found) throw new Error(`${join(moduleDir, 'go.mod')} requires no k8s.io/kubernetes release`);
  return found[1]!;
}

/** The oldest supported minor's binaries (.cache/k8s/<version>/bin, built by `make control-plane-oldest`). */
export function oldestSupported(): KubernetesBuild {
  const version = pinnedVersion(OLDEST_SUPPORTED_MODULE);
  const binDir = process.env.TG_K8S_OLDEST_BIN ?? join(REPO_ROOT, '.cache', 'k8s', version, 'bin');
  const missing = ['kube-apiserver', 'kube-controller-manager', 'kubectl'].filter((b) => !existsSync(join(binDir, b)));
  if (missing.length > 0) throw new Error(`no ${missing.join(', ')} of Kubernetes ${version} under ${binDir}: run \`make control-plane-oldest\` (builds them from test/cluster/gobuild-1.32)`);
  return { version, binDir, etcdBinDir: findBinDir() };
}
