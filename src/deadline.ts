/**
 * A promise bounded by a deadline: settles as `p` does, or rejects with `expired()` once `ms` have
 * passed or `signal` aborts, whichever comes first. The call behind `p` has started (its promise is the
 * argument) and nobody may wait for it any more: its late failure is caught here, since an unhandled
 * rejection ends the process.
 */
export function within<T>(
  p: Promise<T>,
  ms: number,
  signal: AbortSignal | undefined,
  expired: () => Error,
): Promise<T> {
  if (ms <= 0 || signal?.aborted) {
    p.catch(() => {});
    return Promise.reject(expired());
  }
  return new Promise<T>((resolve, reject) => {
    const stop = () => (clearTimeout(timer), reject(expired()));
    const timer = setTimeout(stop, ms);
    signal?.addEventListener('abort', stop, { once: true });
    const done = () => (clearTimeout(timer), signal?.removeEventListener('abort', stop));
    p.then(
      (v) => (done(), resolve(v)),
      (e: unknown) => (done(), reject(e instanceof Error ? e : new Error(String(e)))),
    );
  });
}
