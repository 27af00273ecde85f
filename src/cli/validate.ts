/** `tenantgate validate PATH…`: the offline rules for git commits. */
import { execa } from 'execa';
import { processNow } from '../clock.js';
import type { TenantgateConfig } from '../config/config.js';
import { validateDeclarations } from '../validate/offline.js';
import {
  isProjectObject,
  parseSource,
  positionOf,
  type ParseProblem,
  type SourceDocument,
} from '../validate/source.js';
import type { Project, Violation } from '../validate/types.js';
import { readSources, yamlFiles } from './sources.js';

export interface Finding {
  file: string;
  line: number;
  col: number;
  rule: string;
  message: string;
}

export interface CheckResult {
  findings: Finding[];
  projects: Array<{ source: SourceDocument; project: Project }>;
  others: SourceDocument[];
}

/** Parses and checks declarations; shared by validate and render. */
async function checkPaths(
  paths: string[],
  config: TenantgateConfig,
  baseRef?: string,
  previous: string[] = [],
): Promise<CheckResult> {
  const { documents, problems } = await readSources(paths);
  const base = baseRef ? await baseProjects(paths, baseRef) : [];
  if (previous.length)
    base.push(...(await readSources(previous)).documents.map((d) => d.object).filter(isProjectObject));
  return checkDocuments(documents, problems, config, processNow(), base);
}

/** `at`: the instant the declarations are judged at (`--now`, else the process clock): which bursts have ended (B2). */
export function checkDocuments(
  documents: SourceDocument[],
  problems: ParseProblem[],
  config: TenantgateConfig,
  at: number,
  base: Project[] = [],
): CheckResult {
  const findings: Finding[] = problems.map((p) => ({ ...p, rule: 'S1', message: p.message }));
  const projects = documents
    .filter((d) => isProjectObject(d.object))
    .map((source) => ({ source, project: source.object as Project }));
  const others = documents.filter((d) => !isProjectObject(d.object));
  findings.push(
    ...toFindings(
      projects.map((p) => p.source),
      validateDeclarations(
        projects.map((p) => p.project),
        config,
        at,
        base,
      ),
    ),
  );
  findings.sort(
    (a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.col - b.col || a.rule.localeCompare(b.rule),
  );
  return { findings, projects, others };
}

function toFindings(sources: SourceDocument[], violations: Violation[]): Finding[] {
  return violations.map((v) => {
    const source = sources[v.document ?? 0]!;
    const { line, col } = positionOf(source, v.path);
    return { file: source.file, line, col, rule: v.rule, message: v.message };
  });
}

/** The Project declarations of the same files at a git revision (for T1 in pre-commit / CI). */
async function baseProjects(paths: string[], ref: string): Promise<Project[]> {
  const out: Project[] = [];
  for (const file of await yamlFiles(paths)) {
    const shown = await execa('git', ['show', `${ref}:./${file.replace(/^\.\//, '')}`], {
      reject: false,
      cwd: process.cwd(),
    });
    if (shown.exitCode !== 0) continue;
    for (const doc of parseSource(file, shown.stdout).documents) if (isProjectObject(doc.object)) out.push(doc.object);
  }
  return out;
}

export function formatFinding(f: Finding): string {
  return `${f.file}:${f.line}:${f.col}: [${f.rule}] ${f.message}`;
}

export async function runValidate(
  paths: string[],
  config: TenantgateConfig,
  options: { output: 'text' | 'json'; base?: string; previous?: string[] },
): Promise<number> {
  const { findings, projects } = await checkPaths(paths, config, options.base, options.previous);
  if (options.output === 'json') {
    process.stdout.write(JSON.stringify({ projects: projects.length, findings }, null, 2) + '\n');
  } else {
    for (const f of findings) process.stderr.write(formatFinding(f) + '\n');
    if (findings.length === 0) process.stderr.write(`${projects.length} project(s) valid\n`);
  }
  return findings.length > 0 ? 1 : 0;
}
