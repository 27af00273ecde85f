/** The options every long-running command (webhook, controller) takes; src/cli/options.ts declares their flags. */
import type { LogFormat, LogLevel } from './log.js';

export interface RuntimeOptions {
  config?: string;
  configOptional?: boolean;
  kubeconfig?: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
}
