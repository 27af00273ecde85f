/**
 * Memory of another Node process, read from outside without any change to the product (ADR 0012):
 *
 *  - heap after a full GC: the process is started with `--inspect=127.0.0.1:0` (a bench-only Node flag;
 *    the chart and `tenantgate` never pass it), and this module speaks the Chrome DevTools Protocol to
 *    it: `HeapProfiler.collectGarbage` (a full, compacting collection), then `Runtime.getHeapUsage`;
 *  - the cgroup charge: the process starts inside a memory cgroup of its own (v1 controller; a shell
 *    joins it and `exec`s node, so every page is charged there: this kernel cannot move charges later),
 *    limited like the chart's pod; usage and the working set (usage − inactive file pages, what the
 *    kubelet judges);
 *  - VmRSS from /proc.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT, sleep } from './measure.js';

/** The Node flag that opens the inspector on a free loopback port (printed on stderr, i.e. the log file). */
export const INSPECT_FLAG = '--inspect=127.0.0.1:0';

const MB = 1024 ** 2;

/** One DevTools session to a Node process's inspector. */
export class InspectorHeap {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly socket: WebSocket) {
    socket.addEventListener('message', (event) => {
      const msg = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const w = msg.id === undefined ? undefined : this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id!);
      if (msg.error) w.reject(new Error(msg.error.message));
      else w.resolve(msg.result);
    });
    socket.addEventListener('close', () => {
      for (const w of this.waiting.values()) w.reject(new Error('inspector connection closed'));
      this.waiting.clear();
    });
  }

  /** Finds "Debugger listening on ws://…" in the process's log file (written by --inspect) and connects. */
  static async attach(logFile: string, timeoutMs = 30_000): Promise<InspectorHeap> {
    const deadline = Date.now() + timeoutMs;
    let url: string | undefined;
    while (!url) {
      const text = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
      // The last one: a restarted process appends to the same log.
      url = [...text.matchAll(/Debugger listening on (ws:\/\/\S+)/g)].pop()?.[1];
      if (!url) {
        if (Date.now() > deadline)
          throw new Error(
            `no inspector URL in ${logFile} after ${timeoutMs} ms: was the process started with ${INSPECT_FLAG}?`,
          );
        await sleep(100);
      }
    }
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve(), { once: true });
      socket.addEventListener('error', () => reject(new Error(`cannot connect to the inspector at ${url}`)), {
        once: true,
      });
    });
    return new InspectorHeap(socket);
  }

  private call(method: string, params: Record<string, unknown> = {}, timeoutMs = 60_000): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`inspector ${method}: no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** A full GC in the process, then its V8 heap: used and total (MB), and how long the GC call took. */
  async afterGc(): Promise<{ usedMB: number; totalMB: number; gcMs: number }> {
    const t = performance.now();
    await this.call('HeapProfiler.collectGarbage');
    const gcMs = performance.now() - t;
    const usage = (await this.call('Runtime.getHeapUsage')) as { usedSize: number; totalSize: number };
    return { usedMB: usage.usedSize / MB, totalMB: usage.totalSize / MB, gcMs };
  }

  close(): void {
    this.socket.close();
  }
}

const CGROUP_ROOT = '/sys/fs/cgroup/memory';

export interface MemoryCgroup {
  dir: string;
  /** `command args` as a command that starts inside this cgroup (same pid: the shell execs it). */
  launch(command: string, args: string[]): [string, string[]];
  /** usage_in_bytes, the working set (usage − total_inactive_file) and the peak, MB; failcnt. */
  read(): { usageMB: number; workingSetMB: number; maxUsageMB: number; failcnt: number; oomKills: number };
  remove(): void;
}

/** A v1 memory cgroup limited to `limitBytes`, or undefined (with the reason) when this machine does not let us make one. */
export function memoryCgroup(name: string, limitBytes: number): MemoryCgroup | { unavailable: string } {
  if (!existsSync(join(CGROUP_ROOT, 'memory.limit_in_bytes')))
    return { unavailable: `no cgroup v1 memory controller at ${CGROUP_ROOT}` };
  const dir = join(CGROUP_ROOT, `tenantgate-${name}-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitBytes));
  } catch (err) {
    try {
      rmdirSync(dir);
    } catch {
      // not made
    }
    return { unavailable: `cannot make ${dir}: ${(err as Error).message}` };
  }
  const file = (f: string) => readFileSync(join(dir, f), 'utf8').trim();
  return {
    dir,
    launch: (command, args) => [
      'sh',
      ['-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec "$0" "$@"`, command, ...args],
    ],
    read: () => {
      const usage = Number(file('memory.usage_in_bytes'));
      const inactiveFile = Number(/^total_inactive_file (\d+)$/m.exec(file('memory.stat'))?.[1] ?? 0);
      return {
        usageMB: usage / MB,
        workingSetMB: Math.max(0, usage - inactiveFile) / MB,
        maxUsageMB: Number(file('memory.max_usage_in_bytes')) / MB,
        failcnt: Number(file('memory.failcnt')),
        oomKills: Number(/oom_kill (\d+)/.exec(file('memory.oom_control'))?.[1] ?? 0),
      };
    },
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // a process still in it: left for the OS
      }
    },
  };
}

/** A Kubernetes memory quantity of the chart ("192Mi", "1Gi") in bytes. */
function memoryBytes(text: string, where: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(text);
  if (!m) throw new Error(`${where} is ${JSON.stringify(text)}: expected <n>Mi or <n>Gi`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 ** 3 : MB);
}

/** The chart's memory request and limit of a component (charts/tenantgate/values.yaml). */
export function chartMemory(component: 'webhook' | 'controller'): {
  request: string;
  limit: string;
  requestBytes: number;
  limitBytes: number;
} {
  const values = parse(readFileSync(join(ROOT, 'charts', 'tenantgate', 'values.yaml'), 'utf8')) as Record<
    string,
    { resources?: { requests?: { memory?: string }; limits?: { memory?: string } } }
  >;
  const resources = values[component]?.resources;
  const request = resources?.requests?.memory ?? '';
  const limit = resources?.limits?.memory ?? '';
  return {
    request,
    limit,
    requestBytes: memoryBytes(request, `charts/tenantgate/values.yaml ${component}.resources.requests.memory`),
    limitBytes: memoryBytes(limit, `charts/tenantgate/values.yaml ${component}.resources.limits.memory`),
  };
}

/** Least-squares slope of y over x, and its standard error (NaN with fewer than 3 points). */
export function leastSquares(points: ReadonlyArray<{ x: number; y: number }>): {
  slope: number;
  standardError: number;
  intercept: number;
} {
  const n = points.length;
  if (n < 2) return { slope: NaN, standardError: NaN, intercept: NaN };
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  const sxy = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const slope = sxx === 0 ? NaN : sxy / sxx;
  const intercept = my - slope * mx;
  const residual = points.reduce((a, p) => a + (p.y - (intercept + slope * p.x)) ** 2, 0);
  const standardError = n > 2 && sxx > 0 ? Math.sqrt(residual / (n - 2) / sxx) : NaN;
  return { slope, standardError, intercept };
}
