/**
 * A test-only entry point: `node --import tsx test/support/test-clock/cli.ts <cli/main.js> ARGS…` runs
 * that build's `tenantgate ARGS…` with its process clock read from the file TENANTGATE_TEST_CLOCK_FILE
 * names (file-clock.ts). The clock is installed in the process-clock module of the same build
 * (`<cli/main.js>/../../clock.js`), so a dist/ build and a source tree work alike. The shipped CLI has
 * no test hook (docs/adr/0069-code-structure.md).
 */
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Clock } from '../../../src/clock.js';
import { fileClock, TEST_CLOCK_ENV } from './file-clock.js';

export const TEST_CLOCK_CLI = new URL(import.meta.url).pathname;

async function main(): Promise<void> {
  const [cli, ...args] = process.argv.slice(2);
  if (!cli) throw new Error('usage: node --import tsx test/support/test-clock/cli.ts <cli/main.js or .ts> ARGS…');
  const file = process.env[TEST_CLOCK_ENV];
  if (!file) throw new Error(`${TEST_CLOCK_ENV} is not set: it names the file holding the test's instant`);
  const main = resolve(cli);
  const clockModule = join(dirname(main), '..', main.endsWith('.ts') ? 'clock.ts' : 'clock.js');
  const { setProcessClock } = (await import(pathToFileURL(clockModule).href)) as {
    setProcessClock(clock: Clock): void;
  };
  setProcessClock(fileClock(file));
  // The CLI reads its arguments from process.argv: as if it had been started itself.
  process.argv = [process.argv[0]!, main, ...args];
  await import(pathToFileURL(main).href);
}

if (process.argv[1] && resolve(process.argv[1]) === TEST_CLOCK_CLI) await main();
