/** The version in package.json: what the CLI, the image tag and the chart of this tree must say. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';

export const PACKAGE_VERSION: string = (
  JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
