/**
 * The Kubernetes minors tenantgate supports (ADR 0077) and where their control planes are built: the
 * newest from test/cluster/gobuild, the oldest from test/cluster/gobuild-<minor> (kube-apiserver,
 * kube-controller-manager and kubectl of that release; etcd is the pinned one, shared).
 *
 * A build is found by its pin, never by scanning .cache/k8s: folder names do not sort as versions
 * ("v1.35.4" after "v1.35.10"), and a folder left from an older pin must never be run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../paths.js';

/** The default (newest tested) minor's wrapper module: its go.mod pins Kubernetes and etcd. */
const DEFAULT_MODULE = join(REPO_ROOT, 'test', 'cluster', 'gobuild');
/** The oldest supported minor's wrapper module (its go.mod pins the release). */
const OLDEST_SUPPORTED_MODULE = join(REPO_ROOT, 'test', 'cluster', 'gobuild-1.35');
const CACHE_ROOT = join(REPO_ROOT, '.cache', 'k8s');

export interface KubernetesBuild {
  /** e.g. v1.35.4 */
  version: string;
  binDir: string;
  etcdBinDir: string;
}

/** The pins of a wrapper module's go.mod: the `k8s.io/kubernetes` release, and etcd's when it builds one. */
export interface ModulePins {
  kubernetes: string;
  etcd?: string;
}

/** Reads the pins from a go.mod's text (the same lines hack/build-control-plane.sh reads). */
export function pinsOf(gomod: string, where = 'go.mod'): ModulePins {
  const kubernetes = /^\s*(?:require\s+)?k8s\.io\/kubernetes\s+(v\d+\.\d+\.\d+)\s*$/m.exec(gomod)?.[1];
  if (!kubernetes) throw new Error(`${where} requires no k8s.io/kubernetes release`);
  const etcd = /^\s*(?:require\s+)?go\.etcd\.io\/etcd\/server\/v3\s+(v\d+\.\d+\.\d+)\s*$/m.exec(gomod)?.[1];
  return etcd ? { kubernetes, etcd } : { kubernetes };
}

/** The folder hack/build-control-plane.sh builds a module's pins into: <cache>/<k8s>[-etcd<etcd>]/bin. */
export function buildDirOf(cacheRoot: string, pins: ModulePins): string {
  return join(cacheRoot, `${pins.kubernetes}${pins.etcd ? `-etcd${pins.etcd}` : ''}`, 'bin');
}

function modulePins(moduleDir: string): ModulePins {
  const file = join(moduleDir, 'go.mod');
  return pinsOf(readFileSync(file, 'utf8'), file);
}

/** The release a wrapper module pins (its `k8s.io/kubernetes` requirement). */
function pinnedVersion(moduleDir: string): string {
  return modulePins(moduleDir).kubernetes;
}

function requireBinaries(binDir: string, names: string[], version: string, make: string): void {
  const missing = names.filter((b) => !existsSync(join(binDir, b)));
  if (missing.length > 0)
    throw new Error(
      `no ${missing.join(', ')} of Kubernetes ${version} under ${binDir}: run \`make ${make}\` (builds them from Go modules)`,
    );
}

/** The default minor's build: etcd, kube-apiserver, kube-controller-manager and kubectl at the pins (or TG_K8S_BIN). */
export function defaultBuild(): KubernetesBuild {
  const pins = modulePins(DEFAULT_MODULE);
  const binDir = process.env.TG_K8S_BIN ?? buildDirOf(CACHE_ROOT, pins);
  requireBinaries(
    binDir,
    ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'],
    pins.kubernetes,
    'control-plane',
  );
  return { version: pins.kubernetes, binDir, etcdBinDir: binDir };
}

/** The pinned control plane's binaries (.cache/k8s/<version>-etcd<version>/bin, or TG_K8S_BIN). */
function findBinDir(): string {
  return defaultBuild().binDir;
}

/** The oldest supported minor's binaries (.cache/k8s/<version>/bin, built by `make control-plane-oldest`). */
export function oldestSupported(): KubernetesBuild {
  const version = pinnedVersion(OLDEST_SUPPORTED_MODULE);
  const binDir = process.env.TG_K8S_OLDEST_BIN ?? buildDirOf(CACHE_ROOT, { kubernetes: version });
  requireBinaries(binDir, ['kube-apiserver', 'kube-controller-manager', 'kubectl'], version, 'control-plane-oldest');
  return { version, binDir, etcdBinDir: findBinDir() };
}
