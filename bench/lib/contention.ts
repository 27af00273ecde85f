/**
 * CPU contention for a benchmark: a second process that spins for as long as `work` runs, so that on a
 * two-core machine the measured processes share one core with it (what a noisy neighbour or a CI job does
 * to a small control-plane node).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** Runs `work` with a child process spinning on one core; the child is stopped when `work` settles. */
export async function withOtherCoreBusy<T>(work: () => Promise<T>): Promise<T> {
  const spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  await once(spinner, 'spawn');
  try {
    return await work();
  } finally {
    spinner.kill('SIGKILL');
    if (spinner.exitCode === null && spinner.signalCode === null) await once(spinner, 'exit');
  }
}
