/** `tenantgate render [DIR]`: the Argo CD config-management plugin. All or nothing. */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DEFAULT_CONFIG, parseConfig, type TenantgateConfig } from '../config/config.js';
import { renderProjectsLazily, type KubeObject } from '../render/render.js';
import { toYamlStream, type StreamFormat } from '../render/yaml-stream.js';
import { parseSource } from '../validate/source.js';
import { readSources } from './sources.js';
import { checkDocuments, formatFinding } from './validate.js';

const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

/** kustomize: $TENANTGATE_KUSTOMIZE, else the one on PATH (as in Argo CD's repo-server image). */
export function kustomizeBinary(): string {
  return process.env.TENANTGATE_KUSTOMIZE || 'kustomize';
}

export interface RenderResult {
  /** The YAML stream, or undefined when anything failed. */
  output?: string;
  errors: string[];
}

export async function renderDirectory(dir: string, env: NodeJS.ProcessEnv = process.env, format: StreamFormat = 'yaml'): Promise<RenderResult> {
  const root = resolve(dir);
  let config: TenantgateConfig = DEFAULT_CONFIG;
  const configFile = join(root, 'tenantgate.yaml');
  try {
    if (existsSync(configFile)) config = parseConfig(await readFile(configFile, 'utf8'), 'tenantgate.yaml');
  } catch (err) {
    return { errors: [(err as Error).message] };
  }
  const cluster = env.ARGOCD_ENV_CLUSTER ?? config.clusterName;
  const kustomization = KUSTOMIZATION_FILES.find((f) => existsSync(join(root, f)));
  let sources;
  if (kustomization) {
    const built = await execa(kustomizeBinary(), ['build', root], { reject: false });
    if (built.exitCode !== 0) return { errors: [`${kustomization}: kustomize build failed (exit ${built.exitCode}): ${String(built.stderr).trim()}`] };
    sources = parseSource(`${kustomization} (kustomize build)`, String(built.stdout));
  } else {
    sources = await readSources([root], root);
  }
  const { findings, projects, others } = checkDocuments(sources.documents, sources.problems, config);
  if (findings.length > 0) return { errors: findings.map(formatFinding) };
  if (projects.length === 0 && others.length === 0) {
    return { errors: [`${dir}: no Project declarations found (an empty render would let Argo CD prune everything)`] };
  }
  function* objects(): Generator<unknown> {
    yield* renderProjectsLazily(projects.map((p) => p.project), config, { cluster });
    for (const o of others) yield o.object as KubeObject;
  }
  return { output: toYamlStream(objects(), format), errors: [] };
}

export async function runRender(dir: string, format: StreamFormat = 'yaml'): Promise<number> {
  const result = await renderDirectory(dir, process.env, format);
  if (result.output === undefined) {
    for (const line of result.errors) process.stderr.write(line + '\n');
    return 1;
  }
  process.stdout.write(result.output);
  return 0;
}
