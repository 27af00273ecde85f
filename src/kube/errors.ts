/** Errors of client-node calls: the HTTP status, and a one-line description for logs and status. */

/** HTTP status of a client-node error (ApiException.code), or undefined for transport errors. */
export function statusCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown } | undefined;
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}

export const isNotFound = (err: unknown): boolean => statusCode(err) === 404;
export const isConflict = (err: unknown): boolean => statusCode(err) === 409;

export function describeError(err: unknown): string {
  const code = statusCode(err);
  const body = (err as { body?: unknown })?.body;
  let message = err instanceof Error ? err.message : String(err);
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string')
    message = (body as { message: string }).message;
  else if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: string };
      if (parsed.message) message = parsed.message;
    } catch {
      // keep the error message
    }
  }
  return code ? `${code}: ${firstLine(message)}` : firstLine(message);
}

function firstLine(s: string): string {
  const line = s.split('\n')[0] ?? '';
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}
