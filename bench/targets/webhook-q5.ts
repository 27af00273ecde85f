/** bench/targets/webhook-q5.ts: split out of bench/targets/webhook.ts (see its header for what the webhook benchmark measures). */
import * as k8s from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { type WebhookCertFiles } from '../../src/certs/files.js';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';

import {
  LatencyStats,
  Q5_PROJECTS,
  Q5_WARMUP_PROJECTS,
  SERVER_SCRIPT,
  Target,
  env,
  getText,
  log,
  nowMs,
  post,
  postJson,
  round3,
  sequential,
  startChild,
  stats,
} from '../lib/measure.js';
import { q5GrowingBody, q5PlainBody } from '../lib/reviews.js';

export interface Q5Result {
  requests: number;
  projects: number;
  growing: { ledger: LatencyStats; guardOnly: LatencyStats; admitted: number };
  plain: { ledger: LatencyStats; guardOnly: LatencyStats };
  ledgerOverheadP50Ms: number;
  ledgerConfigMaps: number;
  ledgerEntries: number;
  reservations: string;
}

export async function runQ5(work: string, certs: WebhookCertFiles, cp: ControlPlane): Promise<Q5Result> {
  const n = Math.max(Q5_PROJECTS, Math.round(env('BENCH_WEBHOOK_Q5_REQUESTS', 300)));
  const perProject = Math.ceil(n / Q5_PROJECTS);
  const ca = readFileSync(certs.caCert);
  const totalProjects = Q5_PROJECTS + Q5_WARMUP_PROJECTS;
  const fixtureArgs = [
    '--cert',
    certs.cert,
    '--key',
    certs.key,
    '--projects',
    String(totalProjects),
    '--namespaces',
    String(perProject),
  ];
  // Namespace-major: consecutive requests go to different projects, as independent tenants would.
  const order: Array<[number, number]> = [];
  for (let ns = 0; ns < perProject; ns++) for (let i = 0; i < Q5_PROJECTS && order.length < n; i++) order.push([i, ns]);
  const warmup: Array<[number, number]> = [];
  for (let ns = 0; ns < Math.min(perProject, 10); ns++)
    for (let i = Q5_PROJECTS; i < totalProjects; i++) warmup.push([i, ns]);

  const measure = async (mode: 'ledger' | 'guard') => {
    const child = await startChild(
      ['--import', 'tsx'],
      [SERVER_SCRIPT, mode, ...fixtureArgs, ...(mode === 'ledger' ? ['--kubeconfig', cp.info.kubeconfigs.admin!] : [])],
      join(work, `q5-${mode}.log`),
    );
    const target: Target = { port: child.port, path: '/validate', ca };
    try {
      // Warm-up on projects of their own (their ledgers are not part of the measurement).
      await sequential(target, [
        ...warmup.map(([i, ns]) => q5GrowingBody(i, ns)),
        ...warmup.map(([i, ns]) => q5PlainBody(i, ns)),
      ]);
      const first = await postJson(target, q5GrowingBody(order[0]![0], order[0]![1]));
      if (first.json.response?.allowed !== true)
        throw new Error(`Q5 growing request not admitted: ${JSON.stringify(first.json.response)}`);
      const growing: number[] = [];
      const plain: number[] = [];
      let admitted = 1;
      const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
      // Alternate growing and plain so both see the same conditions; the first growing one was sent above.
      for (let k = 0; k < order.length; k++) {
        const [i, ns] = order[k]!;
        if (k > 0) {
          const t = nowMs();
          const r = await postJsonAgent(agent, target, q5GrowingBody(i, ns));
          growing.push(nowMs() - t);
          if (r.allowed) admitted += 1;
        }
        const t = nowMs();
        await post(agent, target, q5PlainBody(i, ns));
        plain.push(nowMs() - t);
      }
      agent.destroy();
      const metrics = await getText(child.port, '/metrics', ca);
      const reservations = metrics.text
        .split('\n')
        .filter((l) => l.startsWith('tenantgate_webhook_reservations_total'))
        .join(', ');
      return { growing, plain, admitted, reservations };
    } finally {
      await child.stop();
    }
  };

  log(
    `Q5: ${order.length} growing (ResourceQuota CREATE) + ${order.length} plain (Namespace UPDATE) requests, sequential, against a ConfigMapLedger on the control plane`,
  );
  const withLedger = await measure('ledger');
  log(`Q5: the same against the in-process guard alone (no ledger)`);
  const guardOnly = await measure('guard');

  const core = (() => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(cp.info.kubeconfigs.admin!);
    return kc.makeApiClient(k8s.CoreV1Api);
  })();
  const cms = await core.listNamespacedConfigMap({
    namespace: 'tenantgate-system',
    labelSelector: 'app.kubernetes.io/managed-by=tenantgate',
  });
  let entries = 0;
  let measuredMaps = 0;
  for (const cm of cms.items) {
    const project = cm.metadata?.labels?.['tenantgate.io/project'] ?? '';
    if (!/^q5p0(?:[0-2]\d)$/.test(project) || Number(project.slice(3)) >= Q5_PROJECTS) continue;
    measuredMaps += 1;
    entries += (JSON.parse(cm.data?.reservations ?? '[]') as unknown[]).length;
  }
  const g = stats(withLedger.growing);
  const go = stats(guardOnly.growing);
  return {
    requests: order.length,
    projects: Q5_PROJECTS,
    growing: { ledger: g, guardOnly: go, admitted: withLedger.admitted },
    plain: { ledger: stats(withLedger.plain), guardOnly: stats(guardOnly.plain) },
    ledgerOverheadP50Ms: round3(g.p50 - go.p50),
    ledgerConfigMaps: measuredMaps,
    ledgerEntries: entries,
    reservations: withLedger.reservations,
  };
}

export function postJsonAgent(agent: Agent, target: Target, body: Buffer): Promise<{ allowed: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: target.port,
        path: target.path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            resolve({ allowed: (JSON.parse(text) as { response?: { allowed?: boolean } }).response?.allowed === true });
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------
// P3
// ---------------------------------------------------------------------------------------------
