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
