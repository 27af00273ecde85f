/**
 * P1's load generator as several processes: one client can saturate its own core before a fast server
 * does (a single Node client tops out near 20k req/s against the bare server), so P1 throughput runs
 * N client processes, each with its own keep-alive Agent and its share of the requests in flight, and
 * sums what they complete in a common window.
 *
 *   parent: const fleet = await ClientFleet.start(n, ...); await fleet.closedLoop(...); await fleet.stop();
 *   child:  node --import tsx bench/lib/webhook-client.ts   (forked by ClientFleet; speaks over IPC)
 *
 * The window is given in wall-clock time (Date.now()), so every child counts the same interval and the
 * parent reads the server's CPU (and the clients', from /proc) over that interval too.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  P1_PROJECTS,
  Pool,
  cpuWindow,
  post,
  round3,
  sleep,
  stats,
  type Target,
  type ThroughputResult,
} from './measure.js';
import { namespaceCreateBodies, quotaUpdateBodies } from './reviews.js';

export type PoolName = 'namespace-create' | 'quota-update';

interface RunMessage {
  cmd: 'run';
  port: number;
  path: string;
  pool: PoolName;
  concurrency: number;
  /** Date.now() bounds of the measured window; the child starts at once (warm-up) and stops at `to`. */
  from: number;
  to: number;
}

interface RunResult {
  requests: number;
  errors: number;
  latencies: number[];
}

const SCRIPT = fileURLToPath(import.meta.url);

/** The child's next message; rejects if it exits first. Its exit listener goes once answered (a run per round would pile them up). */
function answered(c: ChildProcess, when: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`webhook-client exited with ${code} ${when}`));
    c.once('exit', onExit);
    c.once('message', (m) => {
      c.off('exit', onExit);
      resolve(m);
    });
  });
}

export class ClientFleet {
  private constructor(private readonly children: ChildProcess[]) {}

  /** Forks `n` clients (they inherit this process's CPU affinity) and waits until each built its pools. */
  static async start(n: number, caFile: string, projects = P1_PROJECTS): Promise<ClientFleet> {
    const children = Array.from({ length: n }, (_, k) =>
      fork(SCRIPT, ['--ca', caFile, '--projects', String(projects), '--index', String(k), '--of', String(n)], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    await Promise.all(children.map((c) => answered(c, 'before it was ready')));
    return new ClientFleet(children);
  }

  get pids(): number[] {
    return this.children.map((c) => c.pid!);
  }

  /** Closed loop over all clients: `concurrency` requests in flight in total, counted over the same window. */
  async closedLoop(
    server: string,
    scenario: string,
    target: Target,
    serverPid: number,
    pool: PoolName,
    concurrency: number,
    warmupMs: number,
    durationMs: number,
  ): Promise<ThroughputResult & { clients: number }> {
    const n = this.children.length;
    const from = Date.now() + warmupMs;
    const to = from + durationMs;
    const results = this.children.map((c, k) => {
      const answer = answered(c, 'during a run') as Promise<RunResult>;
      const share = Math.floor(concurrency / n) + (k < concurrency % n ? 1 : 0);
      c.send({
        cmd: 'run',
        port: target.port,
        path: target.path,
        pool,
        concurrency: Math.max(1, share),
        from,
        to,
      } satisfies RunMessage);
      return answer;
    });
    await sleep(Math.max(0, from - Date.now()));
    const window = cpuWindow(serverPid, this.pids);
    await sleep(Math.max(0, to - Date.now()));
    const cpu = window();
    const done = await Promise.all(results);
    const requests = done.reduce((a, r) => a + r.requests, 0);
    const latencies = done.flatMap((r) => r.latencies);
    return {
      server,
      scenario,
      clients: n,
      concurrency,
      durationS: round3(durationMs / 1000),
      requests,
      errors: done.reduce((a, r) => a + r.errors, 0),
      rps: Math.round(requests / (durationMs / 1000)),
      latencyMs: stats(latencies),
      ...cpu(requests),
    };
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The child
// ---------------------------------------------------------------------------------------------

async function child(argv: string[]): Promise<void> {
  const arg = (name: string) => argv[argv.indexOf(`--${name}`) + 1]!;
  const ca = readFileSync(arg('ca'));
  const projects = Number(arg('projects'));
  const index = Number(arg('index'));
  const of = Number(arg('of'));
  // The same bodies as the single-client bench, each client starting at its own offset, so clients
  // do not send the same new namespace at the same moment.
  const rotate = (bodies: Buffer[]) => {
    const at = Math.floor((bodies.length * index) / of);
    return [...bodies.slice(at), ...bodies.slice(0, at)];
  };
  const pools: Record<PoolName, Pool> = {
    'namespace-create': new Pool('namespace-create', rotate(namespaceCreateBodies(60_000, projects))),
    'quota-update': new Pool('quota-update', rotate(quotaUpdateBodies(projects, 10))),
  };
  process.on('message', (m: RunMessage) => {
    if (m.cmd !== 'run') return;
    void run(m, ca, pools[m.pool]).then((r) => process.send!(r));
  });
  process.on('SIGTERM', () => process.exit(0));
  process.send!({ ready: true });
}

async function run(m: RunMessage, ca: Buffer, pool: Pool): Promise<RunResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: m.concurrency, ca });
  const target: Target = { port: m.port, path: m.path, ca };
  const latencies: number[] = [];
  let requests = 0;
  let errors = 0;
  const worker = async () => {
    while (Date.now() < m.to) {
      const body = pool.take();
      const t = performance.now();
      try {
        const { status, allowed } = await post(agent, target, body);
        if (status !== 200 || !allowed) throw new Error(`HTTP ${status}, allowed ${allowed}`);
        const end = Date.now();
        if (end >= m.from && end < m.to) {
          requests += 1;
          if (latencies.length < 500_000) latencies.push(performance.now() - t);
        }
      } catch {
        if (Date.now() >= m.from) errors += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: m.concurrency }, () => worker()));
  agent.destroy();
  return { requests, errors, latencies };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  child(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`webhook-client: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
