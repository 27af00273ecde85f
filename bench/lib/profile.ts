/** bench/lib/profile.ts: split out of bench/targets/webhook.ts (see its header for what the webhook benchmark measures). */
import { readFileSync } from 'node:fs';

import { round1 } from './measure.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface ProfileEntry {
  name: string;
  /** Share of the server's busy (non-idle) CPU time. */
  pct: number;
  /** Server CPU microseconds per request. */
  usPerRequest: number;
}

export interface ProfileSummary {
  server: string;
  scenario: string;
  file: string;
  requests: number;
  rps: number;
  busyUsPerRequest: number;
  /** Time spent in the function itself. */
  topSelf: ProfileEntry[];
  /** Time with the function on the stack. */
  topInclusive: ProfileEntry[];
  /** Self time by package / node core module / source file. */
  byOrigin: ProfileEntry[];
  /** Inclusive time by package / node core module / source file. */
  byOriginInclusive: ProfileEntry[];
}

function origin(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) {
    const m = /^node:(?:internal\/)?([^/]+)/.exec(url);
    return `node:${m?.[1] ?? url}`;
  }
  const src = /\/(src\/.*|bench\/.*)$/.exec(url);
  if (src) return src[1]!;
  return url.replace(/^file:\/\//, '');
}

function frameKey(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  if (!url) return functionName || '(anonymous)';
  return `${functionName || '(anonymous)'} ${origin(url, functionName)}${lineNumber > 0 ? `:${lineNumber + 1}` : ''}`;
}

/**
 * Self and inclusive time from a V8 CPU profile. Samples are counted (not weighted by their wall-clock
 * deltas: a sample taken after the process was descheduled would charge the whole gap to one frame)
 * and scaled to `cpuUsPerRequest`, the server's CPU time per request measured from /proc meanwhile.
 */
export function summariseProfile(
  server: string,
  scenario: string,
  file: string,
  requests: number,
  rps: number,
  cpuUsPerRequest: number,
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const originSelf = new Map<string, number>();
  const originIncl = new Map<string, number>();
  let busy = 0;
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const id of profile.samples) {
    const leaf = byId.get(id);
    if (!leaf || leaf.callFrame.functionName === '(idle)') continue;
    busy += 1;
    add(self, frameKey(leaf));
    add(originSelf, origin(leaf.callFrame.url, leaf.callFrame.functionName));
    const seenFn = new Set<string>();
    const seenOrigin = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur)!;
      if (node.callFrame.functionName === '(root)') continue;
      seenFn.add(frameKey(node));
      seenOrigin.add(origin(node.callFrame.url, node.callFrame.functionName));
    }
    for (const k of seenFn) add(incl, k);
    for (const k of seenOrigin) add(originIncl, k);
  }
  const top = (m: Map<string, number>, n: number): ProfileEntry[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, count]) => {
        const share = count / Math.max(1, busy);
        return { name, pct: round1(share * 100), usPerRequest: round1(share * cpuUsPerRequest) };
      });
  return {
    server,
    scenario,
    file,
    requests,
    rps,
    busyUsPerRequest: cpuUsPerRequest,
    topSelf: top(self, 30),
    topInclusive: top(incl, 80)
      .filter((e) => e.pct < 97)
      .slice(0, 45),
    byOrigin: top(originSelf, 20),
    byOriginInclusive: top(originIncl, 30),
  };
}

// ---------------------------------------------------------------------------------------------
// P1 breakdown: the request path's pieces, in-process, in CPU time (no network, no other process)
// ---------------------------------------------------------------------------------------------
