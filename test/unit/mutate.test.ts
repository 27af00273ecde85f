/** Mutations as JSON Patch, escaped label keys, idempotent. */
import { TEST_NOW } from '../support/instant.js';
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { ReviewContext } from '../../src/validate/admission.js';
import { mutationFor, type AdmissionRequest } from '../../src/webhook/review.js';

const snapshot = MemorySnapshot.of({
  projects: [
    {
      metadata: { name: 'payments', uid: 'uid-payments' },
      spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:payments-admins' }] },
    },
    { metadata: { name: 'web', uid: 'uid-web' }, spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'carol' }] } },
  ],
  namespaces: [
    {
      metadata: {
        name: 'payments-api',
        labels: { 'tenantgate.io/project': 'payments', 'tenantgate.io/tenant': 'acme' },
      },
    },
  ],
});

const ctx = (username: string, groups: string[] = []): ReviewContext => ({
  at: TEST_NOW,
  config: DEFAULT_CONFIG,
  snapshot,
  user: { username, groups },
});

function review(
  kind: string,
  group: string,
  object: Record<string, unknown>,
  namespace?: string,
  operation: AdmissionRequest['operation'] = 'CREATE',
): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group, version: 'v1', kind },
    operation,
    userInfo: {},
    object,
    ...(namespace ? { namespace } : {}),
  };
}

function applyPatch(object: unknown, patchB64: string | undefined): unknown {
  if (!patchB64) return object;
  const patch = JSON.parse(Buffer.from(patchB64, 'base64').toString()) as fastJsonPatch.Operation[];
  return fastJsonPatch.applyPatch(structuredClone(object), patch).newDocument;
}

describe('mutations', () => {
  it('labels and annotates a new namespace of an owner, with ~1-escaped pointers, and is idempotent', () => {
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'payments-dev', labels: { team: 'x' } } };
    const res = mutationFor(ctx('alice', ['acme:payments-admins']), review('Namespace', '', ns));
    expect(res.patchType).toBe('JSONPatch');
    const patch = JSON.parse(Buffer.from(res.patch!, 'base64').toString()) as Array<{
      op: string;
      path: string;
      value: unknown;
    }>;
    expect(patch).toContainEqual({ op: 'add', path: '/metadata/labels/tenantgate.io~1project', value: 'payments' });
    expect(patch).toContainEqual({ op: 'add', path: '/metadata/labels/tenantgate.io~1tenant', value: 'acme' });
    expect(patch).toContainEqual({
      op: 'add',
      path: '/metadata/annotations',
      value: { 'tenantgate.io/project-uid': 'uid-payments' },
    });
    const mutated = applyPatch(ns, res.patch) as typeof ns;
    const again = mutationFor(ctx('alice', ['acme:payments-admins']), review('Namespace', '', mutated));
    expect(again.patch).toBeUndefined();
  });

  it('does not label a namespace for a project its creator does not own', () => {
    const res = mutationFor(
      ctx('bob', ['globex:admins']),
      review('Namespace', '', { metadata: { name: 'payments-x' } }),
    );
    expect(res).toEqual({ uid: 'u1', allowed: true });
  });

  it('adds the cascade finalizer to a Project once', () => {
    const project = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: 'p', finalizers: ['other'] },
      spec: { tenant: 'acme' },
    };
    const res = mutationFor(ctx('admin', ['system:masters']), review('Project', 'tenantgate.io', project));
    const mutated = applyPatch(project, res.patch) as typeof project;
    expect(mutated.metadata.finalizers).toEqual(['other', 'tenantgate.io/cascade-delete']);
    expect(
      mutationFor(ctx('admin', ['system:masters']), review('Project', 'tenantgate.io', mutated)).patch,
    ).toBeUndefined();
    const deleting = { ...project, metadata: { ...project.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    expect(
      mutationFor(ctx('admin', ['system:masters']), review('Project', 'tenantgate.io', deleting, undefined, 'UPDATE'))
        .patch,
    ).toBeUndefined();
  });

  it('labels a ResourceQuota in a project namespace, and leaves others alone', () => {
    const quota = { metadata: { name: 'q', namespace: 'payments-api' }, spec: { hard: { pods: '1' } } };
    const res = mutationFor(ctx('alice', ['acme:payments-admins']), review('ResourceQuota', '', quota, 'payments-api'));
    expect((applyPatch(quota, res.patch) as { metadata: { labels: Record<string, string> } }).metadata.labels).toEqual({
      'tenantgate.io/project': 'payments',
    });
    expect(
      mutationFor(ctx('alice'), review('ResourceQuota', '', { metadata: { name: 'q' } }, 'default')).patch,
    ).toBeUndefined();
  });
});
