/**
 * Graceful shutdown of an HTTP(S) server that sits behind a Service (docs/adr/0004-webhook.md):
 * 1. draining: /readyz answers 503 (the caller's `ready` reads `draining`) while every request is still
 *    served, each answer with `Connection: close`, so the apiserver's kept-alive connections end after
 *    their next answer instead of being cut under a request;
 * 2. after the drain delay (the endpoints have dropped this replica): stop accepting, close idle
 *    connections, let the requests in flight finish (their decisions and ledger writes included);
 * 3. past the in-flight timeout: cut what is left.
 */
import type { Server, ServerResponse } from 'node:http';

export interface ShutdownTimings {
  /** How long to keep serving after readiness went false (the endpoints' propagation). */
  drainDelayMs: number;
  /** How long the requests in flight may take after the server stopped accepting. */
  inFlightTimeoutMs: number;
}

export interface ShutdownResult {
  /** Requests still running when the in-flight timeout cut them (0: a clean stop). */
  cut: number;
}

export interface DrainableServer {
  readonly draining: boolean;
  readonly inFlight: number;
  /** Runs the three steps; resolves once the server has closed. A second call returns the first's promise. */
  shutdown(timings: ShutdownTimings, log?: (message: string) => void): Promise<ShutdownResult>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Counts the requests in flight and marks answers `Connection: close` once draining. Call before listening. */
export function drainable(server: Server, options: { sleep?: (ms: number) => Promise<void> } = {}): DrainableServer {
  const wait = options.sleep ?? sleep;
  let draining = false;
  const inFlight = new Set<ServerResponse>();
  let stopping: Promise<ShutdownResult> | undefined;
  const closeAfter = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('connection', 'close');
  };
  server.prependListener('request', (_req, res) => {
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
    if (draining) closeAfter(res);
  });

  const run = async (
    { drainDelayMs, inFlightTimeoutMs }: ShutdownTimings,
    log: (message: string) => void,
  ): Promise<ShutdownResult> => {
    draining = true;
    for (const res of inFlight) closeAfter(res);
    log(`shutting down: not ready; serving for ${drainDelayMs} ms more while the endpoints drop this replica`);
    await wait(drainDelayMs);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    log(`stopped accepting connections; ${inFlight.size} request(s) in flight`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<'timeout'>(
      (resolve) => (timer = setTimeout(() => resolve('timeout'), inFlightTimeoutMs)),
    );
    const outcome = await Promise.race([closed.then(() => 'closed' as const), timedOut]);
    clearTimeout(timer);
    if (outcome === 'closed') return { cut: 0 };
    const cut = inFlight.size;
    log(`${cut} request(s) still in flight after ${inFlightTimeoutMs} ms: closing their connections`);
    server.closeAllConnections();
    await closed;
    return { cut };
  };

  return {
    get draining() {
      return draining;
    },
    get inFlight() {
      return inFlight.size;
    },
    shutdown(timings, log = () => {}) {
      stopping ??= run(timings, log);
      return stopping;
    },
  };
}
