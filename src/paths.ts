import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository (or installed package) root: src/ and dist/ both sit one level below it. */
export const REPO_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
