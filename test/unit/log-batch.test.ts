/**
 * RecordBatch (src/log-batch.ts): the webhook's decision records reach the log stream in batches —
 * in order, nothing lost, nothing written twice — once enough characters have gathered, when the
 * timer fires, on flush, and before the process exits.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RecordBatch } from '../../src/log-batch.js';

function target() {
  const writes: string[] = [];
  let syncFlushes = 0;
  return {
    writes,
    get syncFlushes() {
      return syncFlushes;
    },
    write: (chunk: string) => void writes.push(chunk),
    flush: (cb?: (err?: Error | null) => void) => cb?.(null),
    flushSync: () => void (syncFlushes += 1),
  };
}

const batches: RecordBatch[] = [];
function batch(...args: ConstructorParameters<typeof RecordBatch>): RecordBatch {
  const b = new RecordBatch(...args);
  batches.push(b);
  return b;
}

afterEach(() => {
  for (const b of batches.splice(0)) b.close();
  vi.useRealTimers();
});

describe('RecordBatch', () => {
  it('hands records over in one write once the batch size is reached, in order', () => {
    const t = target();
    const b = batch(t, 100, 60_000);
    const records = Array.from({ length: 30 }, (_, i) => `{"n":${String(i).padStart(3, '0')}}\n`); // 10 characters each
    for (const r of records.slice(0, 9)) b.write(r);
    expect(t.writes).toEqual([]); // 90 characters: still gathering
    b.write(records[9]!);
    expect(t.writes).toEqual([records.slice(0, 10).join('')]);
    for (const r of records.slice(10)) b.write(r);
    expect(t.writes).toEqual([
      records.slice(0, 10).join(''),
      records.slice(10, 20).join(''),
      records.slice(20, 30).join(''),
    ]);
  });

  it('writes a lone record when the timer fires, and only once', () => {
    vi.useFakeTimers();
    const t = target();
    const b = batch(t, 16_384, 1000);
    b.write('{"lone":1}\n');
    vi.advanceTimersByTime(999);
    expect(t.writes).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(t.writes).toEqual(['{"lone":1}\n']);
    vi.advanceTimersByTime(5000);
    expect(t.writes).toHaveLength(1);
  });

  it('flush and flushSync hand over what has gathered first', () => {
    const t = target();
    const b = batch(t, 16_384, 60_000);
    b.write('a\n');
    let flushed = false;
    b.flush(() => (flushed = true));
    expect(t.writes).toEqual(['a\n']);
    expect(flushed).toBe(true);
    b.write('b\n');
    b.flushSync();
    expect(t.writes).toEqual(['a\n', 'b\n']);
    expect(t.syncFlushes).toBe(1);
  });

  it('hands the batch over on process exit, before listeners registered earlier run', () => {
    const t = target();
    const seen: number[] = [];
    const earlier = () => seen.push(t.writes.length);
    process.on('exit', earlier);
    try {
      const b = batch(t, 16_384, 60_000);
      b.write('last words\n');
      process.emit('exit', 0);
      expect(t.writes).toEqual(['last words\n']);
      expect(seen).toEqual([1]); // pino's exit hook (registered before) already finds it in the stream
    } finally {
      process.off('exit', earlier);
    }
  });

  it('close stops listening for the exit', () => {
    const before = process.listenerCount('exit');
    const b = new RecordBatch(target(), 10, 1000);
    expect(process.listenerCount('exit')).toBe(before + 1);
    b.close();
    expect(process.listenerCount('exit')).toBe(before);
  });
});
