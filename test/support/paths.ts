import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (test/support is two levels below it). */
export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
