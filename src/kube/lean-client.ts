/**
 * A lean JSON client for the few API calls on the webhook's request path (the headroom ledger's
 * read and compare-and-swap write): node:https over one keep-alive Agent, the body written and read
 * as JSON with no model (de)serialisation. Authentication and TLS still come from client-node's
 * KubeConfig (`applyToHTTPSOptions`: CA, client certificate, bearer token, token files, exec plugins),
 * asked again every minute and after a 401, so rotated ServiceAccount tokens keep working.
 * docs/adr/0003-headroom-ledger.md has the measurements behind it.
 */
import { Agent, request, type RequestOptions } from 'node:https';
import type * as k8s from '@kubernetes/client-node';

/** An API error with the HTTP status and the apiserver's Status message (what src/kube/errors.ts reads). */
export class ApiStatusError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

interface Credentials {
  agent: Agent;
  headers: Record<string, string>;
  /** The TLS material of `agent`, for a request on a connection of its own (a watch). */
  tls: Pick<RequestOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'>;
  at: number;
}

/** A stream of JSON lines being read (a watch): `ended` settles when it ends, `abort` ends it now. */
export interface LineStream {
  /** Resolves when the apiserver ended the stream; rejects on a connection error or LineStreamIdle. */
  ended: Promise<void>;
  abort(): void;
}

/** A line stream that delivered nothing for its inactivity limit (the connection may be dead). */
export class LineStreamIdle extends Error {
  override readonly name = 'LineStreamIdle';
}

const REFRESH_MS = 60_000;

export class LeanApiClient {
  private readonly server: URL;
  private cached: Credentials | undefined;
  private loading: Promise<Credentials> | undefined;

  constructor(
    private readonly kubeConfig: k8s.KubeConfig,
    private readonly options: { timeoutMs?: number; now?: () => number } = {},
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
    if (this.server.protocol !== 'https:')
      throw new Error(`the apiserver ${cluster.server} is not https: the lean client speaks TLS only`);
  }

  /**
   * GET/PUT/POST a JSON object, or PATCH one with a JSON merge patch; 2xx resolves with the object,
   * anything else rejects with ApiStatusError.
   */
  async call<T>(method: 'GET' | 'PUT' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<T> {
    const first = await this.send(method, path, body, await this.current());
    if (first.status !== 401) return this.result<T>(first);
    // A rotated token: ask the kubeconfig again, once.
    if (this.cached) this.cached.at = -Infinity;
    return this.result<T>(await this.send(method, path, body, await this.current()));
  }

  /**
   * GETs a body of JSON lines (a watch) on a connection of its own, handing each complete line to
   * `onLine` unparsed (the caller parses what it needs). Resolves once the apiserver answered 2xx;
   * rejects with ApiStatusError otherwise (after asking the kubeconfig again once on 401). The stream
   * ends with LineStreamIdle when nothing arrived for `idleMs`.
   */
  async lines(path: string, onLine: (line: string) => void, idleMs: number): Promise<LineStream> {
    const first = await this.openLines(path, onLine, idleMs, await this.current());
    if ('stream' in first) return first.stream;
    if (first.status !== 401) return this.result<never>(first);
    if (this.cached) this.cached.at = -Infinity;
    const second = await this.openLines(path, onLine, idleMs, await this.current());
    if ('stream' in second) return second.stream;
    return this.result<never>(second);
  }

  private openLines(
    path: string,
    onLine: (line: string) => void,
    idleMs: number,
    credentials: Credentials,
  ): Promise<{ stream: LineStream } | { status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = request({
        host: this.server.hostname,
        port: this.server.port || 443,
        method: 'GET',
        path: `${this.server.pathname.replace(/\/$/, '')}${path}`,
        agent: false,
        ...credentials.tls,
        headers: { ...credentials.headers, accept: 'application/json' },
      });
      req.setTimeout(idleMs, () =>
        req.destroy(new LineStreamIdle(`GET ${path}: nothing from the apiserver for ${idleMs} ms`)),
      );
      req.on('error', reject);
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        if (status < 200 || status >= 300) {
          let text = '';
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status, text }));
          res.on('error', reject);
          return;
        }
        const ended = new Promise<void>((done, failed) => {
          req.removeListener('error', reject);
          req.on('error', failed);
          res.on('error', failed);
          res.on('end', () => done());
          res.on('aborted', () => failed(new Error(`GET ${path}: the apiserver closed the stream mid-answer`)));
        });
        // Settled by the caller's abort too: never an unhandled rejection.
        ended.catch(() => {});
        let partial = '';
        res.on('data', (chunk: string) => {
          let start = 0;
          for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', start)) {
            const line = partial + chunk.slice(start, nl);
            partial = '';
            start = nl + 1;
            if (line.length > 0) onLine(line);
          }
          partial += chunk.slice(start);
        });
        resolve({ stream: { ended, abort: () => req.destroy() } });
      });
      req.end();
    });
  }

  close(): void {
    this.cached?.agent.destroy();
    this.cached = undefined;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private async current(): Promise<Credentials> {
    if (this.cached && this.now() - this.cached.at < REFRESH_MS) return this.cached;
    this.loading ??= this.load(this.cached?.agent).finally(() => (this.loading = undefined));
    this.cached = await this.loading;
    return this.cached;
  }

  /** Headers from the kubeconfig; the Agent (and its TLS material) is built once and kept. */
  private async load(agent?: Agent): Promise<Credentials> {
    const opts: RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === 'string') headers[k.toLowerCase()] = v;
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    const tls = {
      ...(opts.ca ? { ca: opts.ca } : {}),
      ...(opts.cert ? { cert: opts.cert } : {}),
      ...(opts.key ? { key: opts.key } : {}),
      ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}),
      ...(opts.servername ? { servername: opts.servername } : {}),
    };
    const kept = agent ?? new Agent({ keepAlive: true, maxSockets: 16, ...tls });
    return { agent: kept, headers, tls, at: this.now() };
  }

  private send(
    method: string,
    path: string,
    body: unknown,
    credentials: Credentials,
  ): Promise<{ status: number; text: string }> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.server.hostname,
          port: this.server.port || 443,
          method,
          path: `${this.server.pathname.replace(/\/$/, '')}${path}`,
          agent: credentials.agent,
          timeout: this.options.timeoutMs ?? 10_000,
          headers: {
            ...credentials.headers,
            accept: 'application/json',
            ...(payload
              ? {
                  'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
                  'content-length': String(payload.length),
                }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () =>
        req.destroy(
          new Error(`${method} ${path}: no answer from the apiserver within ${this.options.timeoutMs ?? 10_000} ms`),
        ),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  private result<T>(r: { status: number; text: string }): T {
    let parsed: unknown;
    try {
      parsed = r.text ? JSON.parse(r.text) : undefined;
    } catch {
      parsed = r.text;
    }
    if (r.status >= 200 && r.status < 300) return parsed as T;
    const message = (parsed as { message?: unknown } | undefined)?.message;
    throw new ApiStatusError(r.status, typeof message === 'string' ? message : `HTTP ${r.status}`, parsed);
  }
}
