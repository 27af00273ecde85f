/**
 * Prints rendered objects as one YAML stream. `json` (what the Argo CD plugin asks for): each document
 * is JSON — valid YAML, unambiguous for Go's YAML 1.1 readers (no `yes`/`on`/octal surprises), and
 * printed by JSON.stringify, fast enough for the render target (P2, docs/benchmarks.md). `yaml`: block YAML via
 * js-yaml, for people.
 */
import { CORE_SCHEMA, dump } from 'js-yaml';

export type StreamFormat = 'yaml' | 'json';

const YAML_OPTIONS = { schema: CORE_SCHEMA, lineWidth: -1, noRefs: true } as const;

export function toYamlStream(objects: Iterable<unknown>, format: StreamFormat = 'yaml'): string {
  const parts: string[] = [];
  if (format === 'json') for (const object of objects) parts.push('---\n', JSON.stringify(object), '\n');
  else for (const object of objects) parts.push('---\n', dump(object, YAML_OPTIONS));
  return parts.join('');
}
