/** The webhook's HTTP surface (SPEC W1, W5): Express routes over the pure review functions. */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { TenantgateConfig } from '../config/config.js';
import type { ReviewContext, Verdict } from '../validate/admission.js';
import type { Snapshot } from '../validate/types.js';
import type { WebhookMetrics } from './metrics.js';
import { decodeReview, denied, envelope, handledKind, mutationFor, responseFor, verdictFor, type AdmissionRequest } from './review.js';

export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Decides a validation request; the headroom guard (Q5) wraps this to serialise and reserve. */
/** `signal` aborts when the caller (the apiserver) has gone: work done for it can stop. */
export type Decide = (ctx: ReviewContext, request: AdmissionRequest, signal?: AbortSignal) => Promise<Verdict> | Verdict;

export interface WebhookDeps {
  config: TenantgateConfig;
  snapshot: Snapshot;
  ready: () => boolean;
  metrics: WebhookMetrics;
  decide?: Decide;
  pending?: ReviewContext['pending'];
  cacheSizes?: () => Record<string, number>;
  log?: (message: string) => void;
  /** One record per admission decision (the on-call engineer's answer to "why was this denied?"). */
  onDecision?: (decision: AdmissionDecision) => void;
}

export interface AdmissionDecision {
  uid: string;
  path: 'validate' | 'mutate';
  kind: string;
  namespace?: string;
  name?: string;
  user: string;
  operation: string;
  dryRun: boolean;
  verdict: 'allowed' | 'patched' | 'denied';
  /** The rule ids of a denial (or of Q4 warnings). */
  rules: string[];
  code?: number;
  ms: number;
}

function jsonError(res: Response, code: number, error: string): void {
  res.status(code).json({ error });
}

export function createApp(deps: WebhookDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const decide: Decide = deps.decide ?? ((ctx, request) => verdictFor(ctx, request));
  const log = deps.log ?? (() => {});

  app.get('/healthz', (_req, res) => void res.type('text/plain').send('ok'));
  app.get('/readyz', (_req, res) => {
    if (deps.ready()) res.type('text/plain').send('ok');
    else res.status(503).type('text/plain').send('caches not synced');
  });
  app.get('/metrics', async (_req, res) => {
    for (const [kind, n] of Object.entries(deps.cacheSizes?.() ?? {})) deps.metrics.cacheObjects.set({ kind }, n);
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  const body = express.json({ limit: MAX_BODY_BYTES, type: () => true, strict: false });

  const review = (path: 'validate' | 'mutate') => async (req: Request, res: Response) => {
    const started = process.hrtime.bigint();
    const decoded = decodeReview(req.body);
    if (!decoded.ok) {
      deps.metrics.badRequests.inc({ code: '400' });
      return jsonError(res, 400, `invalid AdmissionReview: ${decoded.error}`);
    }
    const request = decoded.request;
    const kind = handledKind(request) ?? 'other';
    let response;
    let rules: string[] = [];
    if (!deps.ready()) {
      response = denied(request.uid, 503, 'tenantgate is not ready: its watch caches have not synced yet; retry in a few seconds');
    } else {
      const ctx: ReviewContext = { config: deps.config, snapshot: deps.snapshot, user: request.userInfo, pending: deps.pending };
      try {
        if (path === 'validate') {
          const gone = new AbortController();
          res.once('close', () => {
            if (!res.writableFinished) gone.abort();
          });
          const result = await decide(ctx, request, gone.signal);
          rules = [...new Set(result.violations.map((v) => v.rule))];
          for (const rule of rules) deps.metrics.denials.inc({ rule });
          if (rules.length === 0) rules = result.warnings.map((w) => /^\[([A-Z]\d)\]/.exec(w)?.[1] ?? '').filter(Boolean);
          response = responseFor(request.uid, result);
        } else {
          response = mutationFor(ctx, request);
        }
      } catch (err) {
        log(`review ${request.uid} failed: ${(err as Error).stack ?? String(err)}`);
        response = denied(request.uid, 500, `tenantgate could not evaluate its rules: ${(err as Error).message}`);
      }
    }
    const verdict = response.allowed ? (response.patch ? 'patched' : 'allowed') : 'denied';
    const labels = { path, operation: request.operation, kind, verdict };
    deps.metrics.requests.inc(labels);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    deps.metrics.latency.observe(labels, seconds);
    res.json(envelope(response));
    if (deps.onDecision) {
      const object = (request.object ?? request.oldObject) as { metadata?: { name?: string } } | null | undefined;
      const name = request.name || object?.metadata?.name;
      deps.onDecision({
        uid: request.uid,
        path,
        kind: request.kind.kind,
        ...(request.namespace ? { namespace: request.namespace } : {}),
        ...(name ? { name } : {}),
        user: request.userInfo.username ?? '',
        operation: request.operation,
        dryRun: request.dryRun === true,
        verdict,
        rules,
        ...(response.status ? { code: response.status.code } : {}),
        ms: Math.round(seconds * 1e6) / 1e3,
      });
    }
  };
  app.post('/validate', body, review('validate'));
  app.post('/mutate', body, review('mutate'));

  app.use((_req, res) => {
    deps.metrics.badRequests.inc({ code: '404' });
    jsonError(res, 404, 'not found: the webhook serves POST /validate, POST /mutate, GET /healthz, /readyz, /metrics');
  });
  // Body-parser and any other error: a clean JSON error, never an admission.
  app.use((err: { type?: string; status?: number; message?: string }, _req: Request, res: Response, _next: NextFunction) => {
    if (err.type === 'entity.too.large') {
      deps.metrics.badRequests.inc({ code: '413' });
      return jsonError(res, 413, `request body larger than ${MAX_BODY_BYTES} bytes`);
    }
    if (err.type === 'entity.parse.failed' || err.type === 'encoding.unsupported' || err.type === 'charset.unsupported' || err.status === 400) {
      deps.metrics.badRequests.inc({ code: '400' });
      return jsonError(res, 400, `invalid JSON body: ${err.message ?? 'parse error'}`);
    }
    const status = err.status && err.status >= 400 && err.status < 600 ? err.status : 500;
    deps.metrics.badRequests.inc({ code: String(status) });
    log(`request failed: ${err.message}`);
    return jsonError(res, status, err.message ?? 'internal error');
  });
  return app;
}
