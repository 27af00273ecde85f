/**
 * The ledger watch reads an event's type, name and resourceVersion from the head of its line and
 * parses the ConfigMap only when asked (src/ledger/ledger-watch.ts, ADR 0003). What it reads must be
 * what JSON.parse reads, whatever the ledger's entries hold; anything else must fall back to a parse.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventHead } from '../../src/ledger/ledger-watch.js';

/** A watch event line in the apiserver's field order (TypeMeta, then metadata from name to managedFields, then data). */
function eventLine(
  type: string,
  name: string,
  resourceVersion: string,
  reservations: string,
  labels: Record<string, string> = {},
): string {
  return JSON.stringify({
    type,
    object: {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: {
        name,
        namespace: 'tenantgate-system',
        uid: '0b4c2d1e-0000-4000-8000-000000000001',
        resourceVersion,
        creationTimestamp: '2026-11-27T14:00:00Z',
        labels: {
          'app.kubernetes.io/managed-by': 'tenantgate',
          'tenantgate.io/project': name.replace('tenantgate-ledger-', ''),
          ...labels,
        },
        finalizers: ['tenantgate.io/ledger'],
        managedFields: [
          {
            manager: 'tenantgate',
            operation: 'Update',
            apiVersion: 'v1',
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:data': { '.': {}, 'f:reservations': {} }, 'f:metadata': { 'f:labels': { '.': {} } } },
          },
        ],
      },
      data: { reservations },
    },
  });
}

describe('eventHead', () => {
  it('reads type, name and resourceVersion of a ledger event as the apiserver writes it', () => {
    const reservations = JSON.stringify([
      { namespace: 'web-a', quota: 'q', allocation: { 'requests.cpu': '2' }, basedOn: '41', created: 1, expires: 2 },
    ]);
    expect(eventHead(eventLine('MODIFIED', 'tenantgate-ledger-web', '12345', reservations))).toEqual({
      type: 'MODIFIED',
      name: 'tenantgate-ledger-web',
      resourceVersion: '12345',
    });
    expect(eventHead(eventLine('DELETED', 'tenantgate-ledger-web', '9', '[]'))?.type).toBe('DELETED');
  });

  it('is not fooled by entries, labels or data that spell the same keys inside strings', () => {
    const hostile = JSON.stringify({
      metadata: { name: 'evil', resourceVersion: '999999' },
      '"name":"': 'x',
      note: '"resourceVersion":"1"',
    });
    const line = eventLine('MODIFIED', 'tenantgate-ledger-web', '77', hostile, { name: 'not-this' });
    expect(eventHead(line)).toEqual({ type: 'MODIFIED', name: 'tenantgate-ledger-web', resourceVersion: '77' });
  });

  it('gives up (the watch then parses the line) on a bookmark, an error, another shape or a version that is not a number', () => {
    expect(
      eventHead(
        '{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"5","creationTimestamp":null}}}',
      ),
    ).toBeUndefined();
    expect(
      eventHead(
        '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}',
      ),
    ).toBeUndefined();
    expect(eventHead('{"object":{"metadata":{"name":"a","resourceVersion":"1"}},"type":"ADDED"}')).toBeUndefined();
    expect(eventHead(eventLine('ADDED', 'tenantgate-ledger-web', 'v1', '[]'))).toBeUndefined();
    expect(eventHead('not json')).toBeUndefined();
  });

  it('agrees with JSON.parse on 2,000 generated events', () => {
    const dnsName = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/);
    fc.assert(
      fc.property(
        fc.constantFrom('ADDED', 'MODIFIED', 'DELETED'),
        dnsName,
        fc.nat({ max: 2 ** 40 }),
        fc.array(fc.oneof(fc.string(), fc.constantFrom('"name":"', '"resourceVersion":"', '"metadata":{', '\\', '"')), {
          maxLength: 8,
        }),
        (type, project, version, pieces) => {
          const line = eventLine(
            type,
            `tenantgate-ledger-${project}`,
            String(version),
            JSON.stringify({ pieces, metadata: { name: pieces.join(''), resourceVersion: pieces.join('') } }),
          );
          const parsed = JSON.parse(line) as {
            type: string;
            object: { metadata: { name: string; resourceVersion: string } };
          };
          expect(eventHead(line)).toEqual({
            type: parsed.type,
            name: parsed.object.metadata.name,
            resourceVersion: parsed.object.metadata.resourceVersion,
          });
        },
      ),
      { numRuns: 2000 },
    );
  });
});
