import { request } from 'node:https';

/** A GET over HTTPS trusting `ca` (the local control plane's or the webhook's), for probes and scrapes. */
export function httpsGet(url: string, options: { ca: Buffer | string; token?: string; timeoutMs?: number }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = options.token ? { authorization: `Bearer ${options.token}` } : {};
    const req = request(url, { ca: options.ca, headers, agent: false, timeout: options.timeoutMs ?? 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}
