/** A lean keep-alive HTTPS client of the apiserver with a bearer token, and how its answers are counted (bench/targets/shipped.ts, bench/targets/soak.ts). */
import { Agent, request } from 'node:https';

export interface ApiAnswer {
  status: number;
  text: string;
  ms: number;
}

export interface Api {
  call(method: string, path: string, body?: unknown, contentType?: string): Promise<ApiAnswer>;
  close(): void;
}

/** A keep-alive HTTPS client with a bearer token: the lean path (no client-node). A failed connection answers status 0. */
export function apiAs(server: string, ca: Buffer, token: string): Api {
  const url = new URL(server);
  const agent = new Agent({ keepAlive: true, maxSockets: 256, ca });
  return {
    call: (method, path, body, contentType = 'application/json') =>
      new Promise((resolve) => {
        const started = performance.now();
        const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            method,
            path,
            agent,
            timeout: 60_000,
            headers: {
              authorization: `Bearer ${token}`,
              ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                text: Buffer.concat(chunks).toString(),
                ms: performance.now() - started,
              }),
            );
          },
        );
        req.on('timeout', () => req.destroy(new Error('timeout after 60 s')));
        req.on('error', (err) => resolve({ status: 0, text: err.message, ms: performance.now() - started }));
        req.end(payload);
      }),
    close: () => agent.destroy(),
  };
}

export type Verdict = 'admitted' | `denied ${string}` | `refused ${string}` | 'error';

/**
 * An admitted request is 200/201; a denial is a 4xx whose message names a rule id (or the quota
 * admission's "exceeded quota"); the apiserver's own refusals (RBAC, not found, conflict, a terminating
 * namespace) are "refused …"; anything else (a failed webhook call, 5xx, no answer) is an error.
 */
export function verdictOf(r: { status: number; text: string }): Verdict {
  if (r.status === 200 || r.status === 201 || r.status === 202) return 'admitted';
  const rule = /\[([A-Z][0-9]+)\]/.exec(r.text)?.[1];
  if (r.status >= 400 && r.status < 500 && rule) return `denied ${rule}`;
  if (r.status === 403 && /exceeded quota/.test(r.text)) return 'denied quota';
  if (/failed calling webhook/.test(r.text)) return 'error';
  if (r.status === 403 && /is forbidden: User/.test(r.text)) return 'refused RBAC';
  if (r.status === 403 && /being terminated|is terminating/.test(r.text)) return 'refused terminating';
  if (r.status === 404) return 'refused not found';
  if (r.status === 409) return /already exists/.test(r.text) ? 'refused already exists' : 'refused conflict';
  return 'error';
}

export const countBy = (verdicts: readonly string[]): Record<string, number> =>
  verdicts.reduce<Record<string, number>>((m, v) => ((m[v] = (m[v] ?? 0) + 1), m), {});
