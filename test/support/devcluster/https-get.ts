import { request } from 'node:https';

export interface HttpsAnswer {
  status: number;
  body: string;
}

export interface HttpsCallOptions {
  method?: string;
  /** The CA to trust; without one the server's certificate is not verified. */
  ca?: Buffer | string;
  token?: string;
  /** A client certificate and key to present (the apiserver's, for the webhook). */
  client?: { cert: Buffer | string; key: Buffer | string };
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs?: number;
}

/** One HTTPS request on a fresh connection, for probes, scrapes and hand-made admission reviews. */
export function httpsCall(url: string, options: HttpsCallOptions = {}): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const headers = { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers };
    const trust = options.ca ? { ca: options.ca } : { rejectUnauthorized: false };
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        ...trust,
        ...options.client,
        headers,
        agent: false,
        timeout: options.timeoutMs ?? 5000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A GET over HTTPS trusting `ca` (the local control plane's or the webhook's), for probes and scrapes. */
export function httpsGet(
  url: string,
  options: { ca: Buffer | string; token?: string; timeoutMs?: number },
): Promise<HttpsAnswer> {
  return httpsCall(url, options);
}
