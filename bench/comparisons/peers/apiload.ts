/**
 * bench/comparisons/peers/apiload.ts: requests through the apiserver as a tenant user (bearer token from the
 * control plane's token file), for bench/comparisons/peers.ts: single creates to check what an engine decides, and
 * an open loop of `dryRun=All` Namespace creates at a fixed rate (nothing is persisted; every admission
 * webhook still runs, since all three declare sideEffects None).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import type { ControlPlane } from '../../../test/support/devcluster/controlplane.js';
import {
  type LatencyStats,
  machineCpu,
  nowMs,
  openLoopSchedule,
  procCpuSeconds,
  round1,
  stats,
} from '../../lib/measure.js';

export interface ApiAnswer {
  status: number;
  message: string;
}

function namespaceBody(name: string, project: string | null): Buffer {
  return Buffer.from(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, ...(project ? { labels: { 'tenantgate.io/project': project } } : {}) },
    }),
  );
}

const caOf = new WeakMap<ControlPlane, Buffer>();

function send(
  cp: ControlPlane,
  agent: Agent | false,
  user: string,
  method: string,
  path: string,
  body?: Buffer,
): Promise<ApiAnswer> {
  const url = new URL(cp.info.server);
  // Read once per control plane, not on every request of the load loop.
  let ca = caOf.get(cp);
  if (!ca) caOf.set(cp, (ca = readFileSync(cp.info.caFile)));
  const token = cp.info.tokens[user];
  if (!token) throw new Error(`no token for ${user}`);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: url.hostname,
        port: url.port,
        path,
        method,
        agent,
        ca,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json',
          ...(body ? { 'content-length': body.length } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let message = '';
          try {
            message = (JSON.parse(text) as { message?: string }).message ?? '';
          } catch {
            message = text.slice(0, 300);
          }
          resolve({ status: res.statusCode ?? 0, message });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One Namespace create by `user` (dry run unless told otherwise). */
export function createNamespace(
  cp: ControlPlane,
  user: string,
  name: string,
  project: string | null,
  dryRun = true,
): Promise<ApiAnswer> {
  return send(
    cp,
    false,
    user,
    'POST',
    `/api/v1/namespaces${dryRun ? '?dryRun=All' : ''}`,
    namespaceBody(name, project),
  );
}

/** One ResourceQuota create by `user` (persisted unless `dryRun`: then every webhook still decides). */
export function createQuota(
  cp: ControlPlane,
  agent: Agent,
  user: string,
  namespace: string,
  name: string,
  cpu: string,
  dryRun = false,
): Promise<ApiAnswer> {
  const body = Buffer.from(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name },
      spec: { hard: { 'requests.cpu': cpu } },
    }),
  );
  return send(
    cp,
    agent,
    user,
    'POST',
    `/api/v1/namespaces/${namespace}/resourcequotas${dryRun ? '?dryRun=All' : ''}`,
    body,
  );
}

/** Deletes every ResourceQuota of a namespace (deletecollection, as the caller's user). */
export function deleteQuotas(cp: ControlPlane, agent: Agent, namespace: string, user = 'admin'): Promise<ApiAnswer> {
  return send(cp, agent, user, 'DELETE', `/api/v1/namespaces/${namespace}/resourcequotas`);
}

/** One Namespace create by `user` with this body, persisted, through `agent`. */
export function postNamespace(cp: ControlPlane, agent: Agent | false, user: string, body: Buffer): Promise<ApiAnswer> {
  return send(cp, agent, user, 'POST', '/api/v1/namespaces', body);
}

/** One Pod create by `user` (persisted unless `dryRun`). */
export function createPod(
  cp: ControlPlane,
  agent: Agent | false,
  user: string,
  namespace: string,
  body: Buffer,
  dryRun = false,
): Promise<ApiAnswer> {
  return send(cp, agent, user, 'POST', `/api/v1/namespaces/${namespace}/pods${dryRun ? '?dryRun=All' : ''}`, body);
}

/** Deletes every Pod of a namespace (deletecollection; a Pod bound to no node goes at once). */
export function deletePods(cp: ControlPlane, agent: Agent, namespace: string, user = 'admin'): Promise<ApiAnswer> {
  return send(cp, agent, user, 'DELETE', `/api/v1/namespaces/${namespace}/pods`);
}

/** The pids of this control plane's processes (their command lines name its directory). */
export function controlPlanePids(cp: ControlPlane): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    if (!cmd.includes(cp.info.dir)) continue;
    for (const name of ['kube-apiserver', 'etcd', 'kube-controller-manager']) {
      if (cmd.split(' ')[0]?.endsWith(`/${name}`)) out[name] = Number(entry);
    }
  }
  return out;
}

export interface CpuCounter {
  /**
   * CPU µs per request of each watched process, and the machine's load meanwhile; `seconds` is each
   * process's CPU seconds over the window, `wallS` the window.
   */
  stop(requests: number): {
    usPerRequest: Record<string, number>;
    machineBusyPct: number;
    seconds: Record<string, number>;
    wallS: number;
  };
}

export function countCpu(pids: Record<string, number>): CpuCounter {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procCpuSeconds(pid)]));
  const m0 = machineCpu();
  const t0 = nowMs();
  return {
    stop(requests: number) {
      const usPerRequest: Record<string, number> = {};
      const seconds: Record<string, number> = {};
      for (const [k, pid] of Object.entries(pids)) {
        seconds[k] = procCpuSeconds(pid) - before[k]!;
        usPerRequest[k] = round1((seconds[k] / Math.max(1, requests)) * 1e6);
      }
      const wall = (nowMs() - t0) / 1000;
      return {
        usPerRequest,
        machineBusyPct: round1(((machineCpu().busy - m0.busy) / wall) * 100),
        seconds,
        wallS: wall,
      };
    },
  };
}

export interface ApiLoopResult {
  rate: number;
  durationS: number;
  sent: number;
  /** 201 Created (a dry run answers 201 too). */
  admitted: number;
  denied: number;
  errors: number;
  latencyMs: LatencyStats;
  firstDenial: string;
  cpu: { usPerRequest: Record<string, number>; machineBusyPct: number };
}

/**
 * Open loop through the apiserver: `rate` dry-run Namespace creates per second for `durationMs` (after
 * `warmupMs`), each a distinct name of `project` by `user`; latency from each request's send.
 */
export async function apiOpenLoop(
  cp: ControlPlane,
  user: string,
  project: string,
  tag: string,
  rate: number,
  warmupMs: number,
  durationMs: number,
  pids: Record<string, number>,
): Promise<ApiLoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const schedule = openLoopSchedule(rate, warmupMs, durationMs);
  const { warmupCount, total } = schedule;
  const latencies = new Float64Array(total);
  let completed = 0;
  let admitted = 0;
  let denied = 0;
  let errors = 0;
  let firstDenial = '';
  let counter: CpuCounter | undefined;
  await schedule.run(
    (index) => {
      const sent = nowMs();
      return send(
        cp,
        agent,
        user,
        'POST',
        '/api/v1/namespaces?dryRun=All',
        namespaceBody(`${project}-${tag}-${index}`, project),
      ).then(
        (r) => {
          if (index < warmupCount) return;
          latencies[completed++] = nowMs() - sent;
          if (r.status === 201) admitted += 1;
          else if (r.status === 403 || r.status === 400 || r.status === 422) {
            denied += 1;
            firstDenial ||= `${r.status} ${r.message}`;
          } else {
            errors += 1;
            firstDenial ||= `${r.status} ${r.message}`;
          }
        },
        () => {
          if (index >= warmupCount) errors += 1;
        },
      );
    },
    () => (counter = countCpu(pids)),
  );
  const counted = counter?.stop(total - warmupCount);
  const cpu = counted
    ? { usPerRequest: counted.usPerRequest, machineBusyPct: counted.machineBusyPct }
    : { usPerRequest: {}, machineBusyPct: NaN };
  agent.destroy();
  return {
    rate,
    durationS: durationMs / 1000,
    sent: total - warmupCount,
    admitted,
    denied,
    errors,
    latencyMs: stats(latencies, completed),
    firstDenial,
    cpu,
  };
}
