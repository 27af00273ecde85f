/**
 * A ledger ConfigMap's data reads back as what tenantgate writes, or is refused naming the ConfigMap, the
 * data key and what is wrong (src/ledger/ledger-format.ts): never read as empty (fail closed).
 */
import { describe, expect, it } from 'vitest';
import { LedgerUnreadable, parseEntries } from '../../src/ledger/ledger-format.js';
import type { LedgerEntry } from '../../src/ledger/ledger.js';

const CM = 'tenantgate-system/tenantgate-ledger-web';
const entry: LedgerEntry = {
  namespace: 'web-a',
  quota: 'q1',
  allocation: { 'requests.cpu': '500m' },
  write: { spec: { hard: { 'requests.cpu': '500m' } } },
  versions: [{ spec: { hard: { 'requests.cpu': '500m' } } }, null],
  basedOn: '41',
  replaces: ['uid-1'],
  seen: { Namespace: '40', ResourceQuota: '41' },
  created: 1_000,
  expires: 31_000,
};

const refusal = (data: string | undefined): string => {
  try {
    parseEntries(CM, data);
  } catch (err) {
    expect(err).toBeInstanceOf(LedgerUnreadable);
    return (err as Error).message;
  }
  throw new Error(`${data} was read as a ledger`);
};

describe('the reservations of a ledger ConfigMap', () => {
  it('read back as written', () => {
    expect(parseEntries(CM, JSON.stringify([entry]))).toEqual([entry]);
    expect(parseEntries(CM, '[]')).toEqual([]);
  });

  it.each([
    [undefined, 'data key reservations: missing (a ledger always has it, "[]" at least)'],
    ['', 'data key reservations: not JSON ('],
    [JSON.stringify([entry]).slice(0, -1), 'data key reservations: not JSON ('],
    ['{}', 'data key reservations: reservations is {}, allowed: an array'],
    ['[7]', 'data key reservations: reservations[0] is 7, allowed: an object (a reservation)'],
    [JSON.stringify([entry, { ...entry, expires: undefined }]), 'reservations[1].expires is missing'],
    [
      JSON.stringify([{ ...entry, expires: '31000' }]),
      'reservations[0].expires is "31000", allowed: a number (epoch milliseconds)',
    ],
    [
      JSON.stringify([{ ...entry, allocation: { 'requests.cpu': 'lots' } }]),
      'reservations[0].allocation.requests.cpu is "lots", allowed: a quantity such as "500m" or "2Gi"',
    ],
    [JSON.stringify([{ ...entry, namespace: '' }]), 'reservations[0].namespace is "", allowed: a non-empty string'],
    [
      JSON.stringify([{ ...entry, versions: [{ spec: { hard: [] } }] }]),
      'reservations[0].versions[0].spec.hard is [], allowed: an object',
    ],
    [
      JSON.stringify([{ ...entry, seen: { Namespace: 'x', ResourceQuota: '1' } }]),
      'reservations[0].seen.Namespace is "x", allowed: a resourceVersion (decimal digits)',
    ],
  ])('%j is refused: %s', (data, problem) => {
    const message = refusal(data);
    expect(message.startsWith(`ConfigMap ${CM}, data key reservations: `), message).toBe(true);
    expect(message).toContain(problem.replace(/^data key reservations: /, ''));
  });
});
