import { describe, expect, it } from 'vitest';
import { createLogger, infoRecorder, jsonLogger } from '../../src/log.js';
import { decisionLog } from '../../src/webhook/start.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';

const fixedTime = () => ',"time":"2026-11-24T01:02:03.004Z"';

function capture(level: 'info' | 'warn' = 'info') {
  const lines: string[] = [];
  const logger = jsonLogger('webhook', level, { write: (line: string) => lines.push(line) }, fixedTime);
  return { logger, lines };
}

const decisions: AdmissionDecision[] = [
  {
    uid: 'u-1',
    path: 'validate',
    kind: 'Namespace',
    namespace: undefined,
    name: 'shop-x',
    user: 'mallory',
    operation: 'CREATE',
    dryRun: true,
    verdict: 'denied',
    rules: ['T4', 'N1'],
    code: 403,
    ms: 0.25,
  },
  {
    uid: 'u-2',
    path: 'mutate',
    kind: 'ResourceQuota',
    namespace: 'shop-a',
    name: undefined,
    user: '',
    operation: 'UPDATE',
    dryRun: false,
    verdict: 'patched',
    rules: [],
    code: undefined,
    ms: 12,
  },
  // What JSON must escape: quotes, backslashes, control characters, non-ASCII, a long value.
  {
    uid: 'u-"3"\\',
    path: 'validate',
    kind: 'Project',
    name: 'tab\there\nnewline',
    user: `système:serviceaccount:${'x'.repeat(80)}`,
    operation: 'DELETE',
    dryRun: false,
    verdict: 'allowed',
    rules: [],
    ms: 1e-3,
  },
];

describe('infoRecorder: the decision record without pino serialising it field by field', () => {
  it('writes the very bytes pino writes for the same record', () => {
    for (const decision of decisions) {
      const viaPino = capture();
      viaPino.logger.info(decision, 'admission decision');
      const fast = capture();
      infoRecorder<AdmissionDecision>(fast.logger, 'admission decision')(decision);
      expect(fast.lines).toHaveLength(1);
      expect(fast.lines[0]).toBe(viaPino.lines[0]);
      expect(JSON.parse(fast.lines[0]!)).toMatchObject({
        level: 30,
        component: 'webhook',
        uid: decision.uid,
        msg: 'admission decision',
      });
    }
  });

  it('leaves out fields that are undefined, as pino does', () => {
    const { logger, lines } = capture();
    infoRecorder<AdmissionDecision>(logger, 'admission decision')(decisions[1]!);
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(Object.keys(record)).not.toContain('name');
    expect(Object.keys(record)).not.toContain('code');
    expect(record.namespace).toBe('shop-a');
  });

  it('writes a record with no fields as pino does', () => {
    const viaPino = capture();
    viaPino.logger.info({}, 'nothing');
    const fast = capture();
    infoRecorder<object>(fast.logger, 'nothing')({});
    expect(fast.lines).toEqual(viaPino.lines);
  });

  it('writes nothing when the logger is above info, and follows a level changed later', () => {
    const { logger, lines } = capture('warn');
    const record = infoRecorder<AdmissionDecision>(logger, 'admission decision');
    record(decisions[0]!);
    expect(lines).toHaveLength(0);
    logger.level = 'info';
    record(decisions[0]!);
    expect(lines).toHaveLength(1);
  });

  it('goes through pino for a logger it does not know (pretty output)', () => {
    const pretty = createLogger({ name: 'webhook', format: 'pretty' });
    // A pretty logger is not a JSON sink: infoRecorder must call logger.info.
    const calls: unknown[][] = [];
    const spy = new Proxy(pretty, {
      get: (t, k) => (k === 'info' ? (...a: unknown[]) => calls.push(a) : Reflect.get(t, k)),
    });
    infoRecorder<AdmissionDecision>(spy, 'admission decision')(decisions[0]!);
    expect(calls).toEqual([[decisions[0], 'admission decision']]);
  });

  it('is what the webhook records its decisions with', () => {
    const viaPino = capture();
    viaPino.logger.info(decisions[0]!, 'admission decision');
    const { logger, lines } = capture();
    decisionLog(logger)(decisions[0]!);
    expect(lines).toEqual(viaPino.lines);
  });
});
