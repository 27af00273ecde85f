/**
 * The harness runs the control plane its go.mod pins, never the newest folder under .cache/k8s: a
 * folder left from another pin ("v1.35.10" and "v1.35.4" side by side, which sort the wrong way as
 * names) must not be picked.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDirOf, pinsOf } from '../support/devcluster/kubernetes-versions.js';

const gomod = (k8s: string, etcd?: string): string => `module tenantgate.io/devcluster

go 1.25.0

require (
${etcd ? `\tgo.etcd.io/etcd/server/v3 ${etcd}\n` : ''}\tk8s.io/kubernetes ${k8s}
)

require (
\tgo.etcd.io/etcd/api/v3 v3.6.5 // indirect
)
`;

describe('the pinned control plane', () => {
  it('reads the Kubernetes and etcd pins a wrapper module requires', () => {
    expect(pinsOf(gomod('v1.35.4', 'v3.6.5'))).toEqual({ kubernetes: 'v1.35.4', etcd: 'v3.6.5' });
    expect(pinsOf(gomod('v1.32.13'))).toEqual({ kubernetes: 'v1.32.13' });
    expect(pinsOf('module x\n\nrequire k8s.io/kubernetes v1.37.2\n')).toEqual({ kubernetes: 'v1.37.2' });
    expect(() => pinsOf('module x\n', 'x/go.mod')).toThrow('x/go.mod requires no k8s.io/kubernetes release');
  });

  it('selects the folder of the pin even when a folder of another pin sorts after it', () => {
    const cache = mkdtempSync(join(tmpdir(), 'tg-k8s-cache-'));
    for (const folder of ['v1.35.4-etcdv3.6.5', 'v1.35.10-etcdv3.6.5', 'v1.9.0-etcdv3.6.5']) {
      mkdirSync(join(cache, folder, 'bin'), { recursive: true });
      writeFileSync(join(cache, folder, 'bin', 'kube-apiserver'), '');
    }
    expect(buildDirOf(cache, pinsOf(gomod('v1.35.4', 'v3.6.5')))).toBe(join(cache, 'v1.35.4-etcdv3.6.5', 'bin'));
    expect(buildDirOf(cache, pinsOf(gomod('v1.35.10', 'v3.6.5')))).toBe(join(cache, 'v1.35.10-etcdv3.6.5', 'bin'));
    expect(buildDirOf(cache, pinsOf(gomod('v1.32.13')))).toBe(join(cache, 'v1.32.13', 'bin'));
  });
});
