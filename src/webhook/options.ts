/**
 * The defaults of `tenantgate webhook`'s flags (src/cli/webhook.ts), declared once: what starts the webhook
 * without a flag (start.ts, decision-records.ts) falls back to the same.
 */
export const WEBHOOK_DEFAULTS = {
  port: 8443,
  host: '0.0.0.0',
  cert: 'certs/tls.pem',
  key: 'certs/tls-key.pem',
  allowedDecisions: 'all',
  slowDecisionMs: 250,
  shutdownDelaySeconds: 5,
} as const;

/** What `tenantgate webhook` runs with (its flags: src/cli/webhook.ts). */
export interface WebhookCliOptions {
  port: number;
  host: string;
  cert: string;
  key: string;
  clientCa?: string;
  clientAllowedNames?: string;
  /** Seconds to keep serving after SIGTERM with /readyz failing (docs/adr/0004-webhook.md). */
  shutdownDelay?: number;
  /** Records of allowed decisions: each its own (all) or summarised (src/webhook/decision-records.ts). */
  allowedDecisions?: 'all' | 'summary';
  /** With `summary`: allowed decisions at least this slow keep their own record. */
  slowDecisionMs?: number;
}
