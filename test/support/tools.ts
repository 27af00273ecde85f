/** Tools the tests use that `make kustomize` builds into .cache/tools (the product finds them on PATH). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';

/** The kustomize version hack/install-kustomize.sh pins (its `version=` line). */
export function pinnedKustomizeVersion(): string {
  const script = readFileSync(join(REPO_ROOT, 'hack', 'install-kustomize.sh'), 'utf8');
  const version = /^version=(v\d+\.\d+\.\d+)\b/m.exec(script)?.[1];
  if (!version) throw new Error('hack/install-kustomize.sh has no `version=vX.Y.Z` line');
  return version;
}

/** Where `make kustomize` puts the pinned kustomize, built or not. */
export function pinnedKustomizePath(): string {
  return join(REPO_ROOT, '.cache', 'tools', `kustomize-${pinnedKustomizeVersion()}`, 'kustomize');
}

/** The pinned kustomize if `make kustomize` built it, else undefined (never another version left in .cache/tools). */
export function cachedKustomize(): string | undefined {
  const bin = pinnedKustomizePath();
  return existsSync(bin) ? bin : undefined;
}
