/**
 * `kubectl tenantgate why`: what kubectl printed for a server-side dry run → the rules that refused it
 * (every tenantgate denial line starts with its rule id, docs/rules.md), what fits and what to change. Pure.
 */
import type { RuleId } from '../validate/types.js';
import { helpFor } from './rules.js';

export interface Finding {
  rule: RuleId;
  title: string;
  message: string;
  /** Q1: the most the budget lets this object ask, by resource (from the denial's "at most X fits"). */
  fits?: { resource: string; atMost: string };
  change: string;
}

export interface Verdict {
  /** e.g. "ResourceQuota payments-batch/big" */
  object: string;
  admitted: boolean;
  denials: Finding[];
  warnings: Finding[];
  /** A refusal without a rule id (RBAC's 403, a schema error, no such namespace…), as kubectl said it. */
  error?: string;
}

/** A rule id as tenantgate writes them, a family letter (S, N, T, Q) and a digit, in brackets. */
const MARKER = /\[([SNTQXH][0-9])\] /g;

/**
 * Splits text into the rule-id segments it carries: "[Q1] a [Q2] b" → Q1 "a", Q2 "b"; text before
 * the first id is dropped.
 */
export function findings(text: string): Finding[] {
  const out: Finding[] = [];
  const marks = [...text.matchAll(MARKER)];
  marks.forEach((m, i) => {
    const rule = m[1] as RuleId;
    const end = i + 1 < marks.length ? marks[i + 1]!.index : text.length;
    const message = text.slice(m.index + m[0].length, end).trim();
    const help = helpFor(rule);
    out.push({ rule, title: help.title, message, ...fitsOf(rule, message), change: help.change });
  });
  return out;
}

function fitsOf(rule: RuleId, message: string): { fits?: Finding['fits'] } {
  if (rule !== 'Q1') return {};
  const asks = /asks (\S+) /.exec(message);
  const most = /at most (\S+) fits/.exec(message);
  if (asks && most) return { fits: { resource: asks[1]!, atMost: most[1]! } };
  if (asks && /nothing fits/.test(message)) return { fits: { resource: asks[1]!, atMost: '0' } };
  return {};
}

/** kubectl's result for one object's dry run → its verdict. */
export function verdictOf(object: string, run: { exitCode: number; stderr: string }): Verdict {
  const warnings: Finding[] = [];
  const errorLines: string[] = [];
  for (const line of run.stderr.split('\n')) {
    if (line.startsWith('Warning: ')) warnings.push(...findings(line.slice('Warning: '.length)));
    else if (line.trim()) errorLines.push(line);
  }
  if (run.exitCode === 0) return { object, admitted: true, denials: [], warnings };
  const errorText = errorLines.join('\n');
  const denials = findings(errorText);
  return {
    object,
    admitted: false,
    denials,
    warnings,
    ...(denials.length === 0 ? { error: errorText.trim() || `kubectl exited with ${run.exitCode}` } : {}),
  };
}

/** A document of the file as the verdict names it: "Kind namespace/name" (or "Kind name" when cluster-scoped). */
export function objectName(doc: unknown, defaultNamespace: string | undefined, index: number): string {
  const o = doc as {
    kind?: unknown;
    metadata?: { name?: unknown; generateName?: unknown; namespace?: unknown };
  } | null;
  const kind = typeof o?.kind === 'string' ? o.kind : `document ${index + 1}`;
  const name =
    typeof o?.metadata?.name === 'string'
      ? o.metadata.name
      : typeof o?.metadata?.generateName === 'string'
        ? `${o.metadata.generateName}*`
        : '?';
  const ns =
    typeof o?.metadata?.namespace === 'string'
      ? o.metadata.namespace
      : kind === 'Namespace' || kind === 'Project'
        ? undefined
        : defaultNamespace;
  return `${kind} ${ns ? `${ns}/` : ''}${name}`;
}

/** The human report: one block per object, each rule with its title, the denial, what fits and what to change. */
export function whyText(verdicts: readonly Verdict[]): string {
  const lines: string[] = [];
  for (const v of verdicts) {
    lines.push(`${v.object}: ${v.admitted ? 'admitted' : 'refused'}`);
    for (const f of v.denials) {
      lines.push(`  [${f.rule}] ${f.title}`);
      lines.push(`      ${f.message}`);
      if (f.fits) lines.push(`      fits: ${f.fits.resource} at most ${f.fits.atMost}`);
      lines.push(`      change: ${f.change}`);
    }
    if (v.error) for (const l of v.error.split('\n')) lines.push(`  ${l}`);
    for (const w of v.warnings) lines.push(`  warning [${w.rule}] ${w.message}`);
  }
  const refused = verdicts.filter((v) => !v.admitted).length;
  lines.push(
    '',
    refused === 0
      ? `All ${verdicts.length} objects would be admitted.`
      : `${refused} of ${verdicts.length} objects would be refused.`,
  );
  return lines.join('\n') + '\n';
}
