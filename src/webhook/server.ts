/**
 * The webhook's HTTP surface. POST /validate and /mutate — every admission request —
 * are served by a lean node:http handler (body read with the same 3 MiB limit, JSON.parse, one
 * pre-sized write); Express serves the rest (/healthz, /readyz, /metrics, 404s) and any admission
 * request the lean path does not take (a content encoding, a charset other than UTF-8, a path
 * spelled otherwise), with the same rules behind both. P1: Express's router, body-parser and
 * res.json cost more CPU per request than the rules (ADR 0004).
 */
import { processNow } from '../clock.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { TenantgateConfig } from '../config/config.js';
import type { ReviewContext, Verdict } from '../validate/admission.js';
import type { Snapshot } from '../validate/types.js';
import type { WebhookMetrics } from './metrics.js';
import type { ClientAuthResult } from './client-auth.js';
import {
  decodeReview,
  denied,
  handledKind,
  mutationFor,
  responseFor,
  verdictFor,
  type AdmissionRequest,
  type AdmissionResponse,
} from './review.js';

export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Decides a validation request; the headroom guard (Q5) wraps this to serialise and reserve. */
/** `signal` aborts when the caller (the apiserver) has gone: work done for it can stop. */
export type Decide = (
  ctx: ReviewContext,
  request: AdmissionRequest,
  signal?: AbortSignal,
) => Promise<Verdict> | Verdict;

export interface WebhookDeps {
  config: TenantgateConfig;
  snapshot: Snapshot;
  ready: () => boolean;
  /**
   * What /readyz answers: the caches synced and every watch connected. False while a watch re-lists or
   * is broken, so the Service sends admissions to other replicas (this one refuses growth meanwhile, Q5).
   * Default: `ready`.
   */
  current?: () => boolean;
  /** True once a graceful shutdown began: /readyz answers 503 while reviews are still served (graceful.ts). */
  draining?: () => boolean;
  metrics: WebhookMetrics;
  decide?: Decide;
  /**
   * Whether `decide` may wait (for the headroom ledger): only then does a review get an AbortController
   * that aborts when the apiserver goes away. Without a ledger the guard always decides synchronously,
   * so the controller and its 'close' listener would be made for nothing on every request. Default: true.
   */
  mayWait?: boolean;
  pending?: ReviewContext['pending'];
  cacheSizes?: () => Record<string, number>;
  log?: (message: string) => void;
  /** One record per admission decision (the on-call engineer's answer to "why was this denied?"). */
  onDecision?: (decision: AdmissionDecision) => void;
  /**
   * Who may send admission reviews (client-auth.ts): asked before a review's body is read; a refusal
   * is answered 401/403 and nothing is decided or reserved. Absent: anyone who can connect.
   */
  authenticate?: (req: IncomingMessage) => ClientAuthResult;
}

export interface AdmissionDecision {
  uid: string;
  path: 'validate' | 'mutate';
  kind: string;
  namespace?: string | undefined;
  name?: string | undefined;
  user: string;
  operation: string;
  dryRun: boolean;
  verdict: 'allowed' | 'patched' | 'denied';
  /** The rule ids of a denial (or of Q4 warnings). */
  rules: string[];
  code?: number | undefined;
  ms: number;
}

/** JSON text as the answer. */
function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A JSON error answer (never an AdmissionReview, so nothing can read it as an admission). */
function sendJson(res: ServerResponse, code: number, value: unknown): void {
  sendText(res, code, JSON.stringify(value));
}

/**
 * A request refused before review (malformed, too large, unknown path, failed): counted and answered with a JSON error.
 */
function refuse(metrics: WebhookMetrics, res: ServerResponse, code: number, error: string): void {
  metrics.badRequests.inc({ code: String(code) });
  sendJson(res, code, { error });
}

/** The same answers from the lean path and from Express's body parser. */
const TOO_LARGE = `request body larger than ${MAX_BODY_BYTES} bytes`;
const invalidJson = (detail: string) => `invalid JSON body: ${detail}`;

type ReviewPath = 'validate' | 'mutate';
type Verdict3 = AdmissionDecision['verdict'];

/** The rule ids of a decision that names none (shared, never written to). */
const NO_RULES: string[] = [];
const ENVELOPE_HEAD = '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":';

/**
 * The AdmissionReview answer as JSON text: what JSON.stringify(envelope(response)) writes, without the envelope object.
 */
function reviewJson(response: AdmissionResponse): string {
  return `${ENVELOPE_HEAD}${JSON.stringify(response)}}`;
}

/** Milliseconds from a monotonic clock, as a double (process.hrtime.bigint() allocates a BigInt per call). */
const clock = () => performance.now();

/** The review of one parsed body: decode, decide, count, answer, record. Shared by both HTTP paths. */
function reviewer(deps: WebhookDeps) {
  const decide: Decide = deps.decide ?? ((ctx, request) => verdictFor(ctx, request));
  const log = deps.log ?? (() => {});
  // prom-client resolves label objects to a child on every call; the label values here are bounded
  // (2 paths × 4 operations × 4 kinds × 3 verdicts), so each child is looked up once, through nested
  // maps keyed by the values themselves (no key string is built per request).
  type Child = { requests: { inc(): void }; latency: { observe(v: number): void } };
  const children = new Map<string, Map<string, Map<string, Map<Verdict3, Child>>>>();
  const level = <K, V>(map: Map<K, V>, key: K, make: () => V): V => {
    let v = map.get(key);
    if (v === undefined) map.set(key, (v = make()));
    return v;
  };
  const metricsOf = (path: ReviewPath, operation: string, kind: string, verdict: Verdict3): Child => {
    const byVerdict = level(
      level(
        level(children, path, () => new Map()),
        operation,
        () => new Map(),
      ),
      kind,
      () => new Map<Verdict3, Child>(),
    );
    let child = byVerdict.get(verdict);
    if (!child) {
      child = {
        requests: deps.metrics.requests.labels(path, operation, kind, verdict),
        latency: deps.metrics.latency.labels(path, operation, kind, verdict),
      };
      byVerdict.set(verdict, child);
    }
    return child;
  };
  const denialCounters = new Map<string, { inc(): void }>();
  const countDenial = (rule: string) => {
    let child = denialCounters.get(rule);
    if (!child) denialCounters.set(rule, (child = deps.metrics.denials.labels(rule)));
    child.inc();
  };

  /** Counts, answers and records one decided request. */
  const answer = (
    path: ReviewPath,
    request: AdmissionRequest,
    kind: string,
    response: AdmissionResponse,
    rules: string[],
    res: ServerResponse,
    started: number,
  ): void => {
    const verdict: Verdict3 = response.allowed ? (response.patch ? 'patched' : 'allowed') : 'denied';
    const counted = metricsOf(path, request.operation, kind, verdict);
    counted.requests.inc();
    const seconds = (clock() - started) / 1e3;
    counted.latency.observe(seconds);
    sendText(res, 200, reviewJson(response));
    if (deps.onDecision) {
      const object = (request.object ?? request.oldObject) as { metadata?: { name?: string } } | null | undefined;
      // Absent fields are undefined rather than spread in: one object shape, and JSON leaves them out.
      deps.onDecision({
        uid: request.uid,
        path,
        kind: request.kind.kind,
        namespace: request.namespace || undefined,
        name: request.name || object?.metadata?.name || undefined,
        user: request.userInfo.username ?? '',
        operation: request.operation,
        dryRun: request.dryRun === true,
        verdict,
        rules,
        code: response.status?.code,
        ms: Math.round(seconds * 1e6) / 1e3,
      });
    }
  };
  const failed = (request: AdmissionRequest, err: unknown): AdmissionResponse => {
    log(`review ${request.uid} failed: ${(err as Error).stack ?? String(err)}`);
    return denied(request.uid, 500, `tenantgate could not evaluate its rules: ${(err as Error).message}`);
  };
  const validated = (request: AdmissionRequest, result: Verdict): { response: AdmissionResponse; rules: string[] } => {
    let rules = NO_RULES;
    if (result.violations.length > 0) {
      rules = [...new Set(result.violations.map((v) => v.rule))];
      for (const rule of rules) countDenial(rule);
    } else if (result.warnings.length > 0) {
      rules = result.warnings.map((w) => /^\[([A-Z]\d+)\]/.exec(w)?.[1] ?? '').filter(Boolean);
    }
    return { response: responseFor(request.uid, result), rules };
  };

  /**
   * Decode, decide, count, answer, record. Synchronous unless the decision is (it waits for the
   * headroom ledger): most requests make no promise at all.
   */
  const mayWait = deps.mayWait ?? true;
  return (path: ReviewPath, body: unknown, res: ServerResponse, started: number): Promise<void> | undefined => {
    const decoded = decodeReview(body);
    if (!decoded.ok) {
      refuse(deps.metrics, res, 400, `invalid AdmissionReview: ${decoded.error}`);
      return undefined;
    }
    const request = decoded.request;
    const kind = handledKind(request) ?? 'other';
    if (!deps.ready()) {
      answer(
        path,
        request,
        kind,
        denied(
          request.uid,
          503,
          'tenantgate is not ready: its watch caches have not synced yet; retry in a few seconds',
        ),
        NO_RULES,
        res,
        started,
      );
      return undefined;
    }
    const ctx: ReviewContext = {
      config: deps.config,
      snapshot: deps.snapshot,
      user: request.userInfo,
      at: processNow(),
      pending: deps.pending,
    };
    if (path === 'mutate') {
      let response: AdmissionResponse;
      try {
        response = mutationFor(ctx, request);
      } catch (err) {
        response = failed(request, err);
      }
      answer(path, request, kind, response, NO_RULES, res, started);
      return undefined;
    }
    let decided: ReturnType<Decide>;
    try {
      let signal: AbortSignal | undefined;
      if (mayWait) {
        const gone = new AbortController();
        res.once('close', () => {
          if (!res.writableFinished) gone.abort();
        });
        signal = gone.signal;
      }
      decided = decide(ctx, request, signal);
    } catch (err) {
      answer(path, request, kind, failed(request, err), NO_RULES, res, started);
      return undefined;
    }
    const finish = (result: Verdict) => {
      let outcome: { response: AdmissionResponse; rules: string[] };
      try {
        outcome = validated(request, result);
      } catch (err) {
        outcome = { response: failed(request, err), rules: NO_RULES };
      }
      answer(path, request, kind, outcome.response, outcome.rules, res, started);
    };
    if (!(decided instanceof Promise)) {
      finish(decided);
      return undefined;
    }
    return decided.then(finish, (err: unknown) =>
      answer(path, request, kind, failed(request, err), NO_RULES, res, started),
    );
  };
}

/** The path of a lean-served admission request ("/validate", "/validate?timeout=10s"), else undefined. */
function leanPath(req: IncomingMessage): ReviewPath | undefined {
  if (req.method !== 'POST') return undefined;
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const which = path === '/validate' ? 'validate' : path === '/mutate' ? 'mutate' : undefined;
  if (!which) return undefined;
  // What only body-parser handles (and the apiserver never sends): compressed bodies, other charsets.
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return undefined;
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(req.headers['content-type'] ?? '')?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) return undefined;
  return which;
}

export type WebhookApp = ((req: IncomingMessage, res: ServerResponse) => void) & { readonly express: express.Express };

export function createApp(deps: WebhookDeps): WebhookApp {
  const review = reviewer(deps);
  const log = deps.log ?? (() => {});
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get('/healthz', (_req, res) => void res.type('text/plain').send('ok'));
  app.get('/readyz', (_req, res) => {
    if (deps.draining?.()) res.status(503).type('text/plain').send('shutting down');
    else if (!deps.ready()) res.status(503).type('text/plain').send('caches not synced');
    else if (deps.current && !deps.current())
      res.status(503).type('text/plain').send('a watch is re-listing or broken');
    else res.type('text/plain').send('ok');
  });
  app.get('/metrics', async (_req, res) => {
    for (const [kind, n] of Object.entries(deps.cacheSizes?.() ?? {})) deps.metrics.cacheObjects.set({ kind }, n);
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  /** The caller's answer when it may not send reviews (counted with the refused requests), else undefined. */
  const unauthenticated = (req: IncomingMessage, res: ServerResponse): true | undefined => {
    const auth = deps.authenticate?.(req);
    if (!auth || auth.ok) return undefined;
    log(`refused an admission review from ${req.socket.remoteAddress ?? 'unknown'}: ${auth.error}`);
    refuse(deps.metrics, res, auth.code, auth.error);
    return true;
  };
  const authenticated = (req: Request, res: Response, next: NextFunction) => {
    if (!unauthenticated(req, res)) next();
  };

  const body = express.json({ limit: MAX_BODY_BYTES, type: () => true, strict: false });
  const viaExpress = (path: ReviewPath) => (req: Request, res: Response, next: NextFunction) => {
    try {
      void review(path, req.body, res, clock())?.catch(next);
    } catch (err) {
      next(err);
    }
  };
  app.post('/validate', authenticated, body, viaExpress('validate'));
  app.post('/mutate', authenticated, body, viaExpress('mutate'));

  app.use((_req, res) => {
    refuse(
      deps.metrics,
      res,
      404,
      'not found: the webhook serves POST /validate, POST /mutate, GET /healthz, /readyz, /metrics',
    );
  });
  // Body-parser and any other error: a clean JSON error, never an admission.
  app.use(
    (err: { type?: string; status?: number; message?: string }, _req: Request, res: Response, _next: NextFunction) => {
      if (err.type === 'entity.too.large') return refuse(deps.metrics, res, 413, TOO_LARGE);
      if (
        err.type === 'entity.parse.failed' ||
        err.type === 'encoding.unsupported' ||
        err.type === 'charset.unsupported' ||
        err.status === 400
      ) {
        return refuse(deps.metrics, res, 400, invalidJson(err.message ?? 'parse error'));
      }
      const status = err.status && err.status >= 400 && err.status < 600 ? err.status : 500;
      log(`request failed: ${err.message}`);
      return refuse(deps.metrics, res, status, err.message ?? 'internal error');
    },
  );

  const lean = (path: ReviewPath, req: IncomingMessage, res: ServerResponse) => {
    const started = clock();
    if (unauthenticated(req, res)) return;
    const fail = (err: unknown) => {
      log(`request failed: ${(err as Error).stack ?? String(err)}`);
      if (!res.headersSent) return refuse(deps.metrics, res, 500, (err as Error).message ?? 'internal error');
      deps.metrics.badRequests.inc({ code: '500' });
      res.destroy();
    };
    const tooLarge = () => refuse(deps.metrics, res, 413, TOO_LARGE);
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > MAX_BODY_BYTES) {
      // Nothing read: Node discards the body once the answer is written and keeps the connection.
      return tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      // A chunked body past the limit: answer now and close the connection rather than read on.
      req.off('data', onData);
      req.off('end', onEnd);
      req.pause();
      res.shouldKeepAlive = false;
      tooLarge();
    };
    const onEnd = () => {
      let parsed: unknown;
      try {
        let text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        // As express.json with strict: false: an empty body is {}, any JSON value parses (decodeReview judges it).
        parsed = text.length === 0 ? {} : JSON.parse(text);
      } catch (err) {
        return refuse(deps.metrics, res, 400, invalidJson((err as Error).message));
      }
      try {
        review(path, parsed, res, started)?.catch(fail);
      } catch (err) {
        fail(err);
      }
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', () => res.destroy());
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = leanPath(req);
    if (path) lean(path, req, res);
    else app(req, res);
  };
  return Object.assign(handler, { express: app });
}
