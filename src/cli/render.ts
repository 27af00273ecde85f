/** `tenantgate render [DIR]`: the Argo CD config-management plugin. All or nothing. */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { processNow } from '../clock.js';
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

/** The plugin's switch for the tenants' AppProjects (an Application's plugin env `APP_PROJECTS`). */
export const APP_PROJECTS_ENV = 'ARGOCD_ENV_APP_PROJECTS';

export interface RenderFlags {
  /** `--app-projects`: also the tenants' Argo CD AppProjects (otherwise $ARGOCD_ENV_APP_PROJECTS decides). */
  appProjects?: boolean;
  /** `--fleet-hub`: rendering for the fleet's hub, also the FleetBudgets (otherwise $ARGOCD_ENV_FLEET_HUB decides). */
  fleetHub?: boolean;
}

/** The plugin's switch for rendering on the fleet's hub (an Application's plugin env `FLEET_HUB`, docs/fleet.md). */
export const FLEET_HUB_ENV = 'ARGOCD_ENV_FLEET_HUB';

/** `--app-projects`, else ARGOCD_ENV_APP_PROJECTS: true/false (any case) or unset/empty; anything else is an error. */
function appProjectsWanted(flags: RenderFlags, env: NodeJS.ProcessEnv): boolean | string {
  if (flags.appProjects) return true;
  const raw = env[APP_PROJECTS_ENV];
  if (raw === undefined || raw.trim() === '') return false;
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === 'false') return value === 'true';
  return (
    `${APP_PROJECTS_ENV} is ${JSON.stringify(raw)}; allowed: "true" or "false" (the Application's plugin env ` +
    `APP_PROJECTS)`
  );
}

/** A true/false plugin env (any case; unset or empty: false); anything else is an error naming it. */
function booleanEnv(env: NodeJS.ProcessEnv, name: string, pluginName: string): boolean | string {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return false;
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === 'false') return value === 'true';
  return `${name} is ${JSON.stringify(raw)}; allowed: "true" or "false" (the Application's plugin env ${pluginName})`;
}

export interface RenderResult {
  /** The YAML stream, or undefined when anything failed. */
  output?: string;
  errors: string[];
}

export async function renderDirectory(
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
  format: StreamFormat = 'yaml',
  flags: RenderFlags = {},
): Promise<RenderResult> {
  const root = resolve(dir);
  const wanted = appProjectsWanted(flags, env);
  if (typeof wanted === 'string') return { errors: [wanted] };
  const appProjects = wanted;
  const fleetHubWanted = flags.fleetHub ? true : booleanEnv(env, FLEET_HUB_ENV, 'FLEET_HUB');
  if (typeof fleetHubWanted === 'string') return { errors: [fleetHubWanted] };
  const fleetHub = fleetHubWanted;
  let config: TenantgateConfig = DEFAULT_CONFIG;
  const configFile = join(root, 'tenantgate.yaml');
  try {
    if (existsSync(configFile)) config = parseConfig(await readFile(configFile, 'utf8'), 'tenantgate.yaml');
  } catch (err) {
    return { errors: [(err as Error).message] };
  }
  const cluster = env.ARGOCD_ENV_CLUSTER ?? config.clusterName;
  if (appProjects && config.argocd.sourceRepos.length === 0) {
    return {
      errors: [
        `tenantgate.yaml: argocd.sourceRepos is empty, so the tenants' AppProjects (--app-projects, ` +
          `${APP_PROJECTS_ENV}=true) would admit no Application; ` +
          ('allowed: a list of repository URLs or globs, {tenant} replaced with the tenant ' +
            '(https://git.example.com/{tenant}/*), or "*" for any'),
      ],
    };
  }
  const kustomization = KUSTOMIZATION_FILES.find((f) => existsSync(join(root, f)));
  let sources;
  if (kustomization) {
    const built = await execa(kustomizeBinary(), ['build', root], { reject: false });
    if (built.exitCode !== 0)
      return {
        errors: [`${kustomization}: kustomize build failed (exit ${built.exitCode}): ${String(built.stderr).trim()}`],
      };
    sources = parseSource(`${kustomization} (kustomize build)`, String(built.stdout));
  } else {
    sources = await readSources([root], root);
  }
  const at = processNow();
  const { findings, projects, others } = checkDocuments(sources.documents, sources.problems, config, at);
  if (findings.length > 0) return { errors: findings.map(formatFinding) };
  if (projects.length === 0 && others.length === 0) {
    return { errors: [`${dir}: no Project declarations found (an empty render would let Argo CD prune everything)`] };
  }
  function* objects(): Generator<unknown> {
    yield* renderProjectsLazily(
      projects.map((p) => p.project),
      config,
      { cluster, appProjects, fleetHub, at },
    );
    for (const o of others) yield o.object as KubeObject;
  }
  return { output: toYamlStream(objects(), format), errors: [] };
}

export async function runRender(dir: string, format: StreamFormat = 'yaml', flags: RenderFlags = {}): Promise<number> {
  const result = await renderDirectory(dir, process.env, format, flags);
  if (result.output === undefined) {
    for (const line of result.errors) process.stderr.write(line + '\n');
    return 1;
  }
  process.stdout.write(result.output);
  return 0;
}
