/**
 * A benchmark's targets for `--check` (docs/benchmarks.md): each is met, missed, or not judged — the run
 * cannot tell, because it was scaled down (fewer render sizes, P3 extrapolated) or the part that measures
 * the target was switched off (BENCH_WEBHOOK_P1=0, BENCH_WEBHOOK_RSS=0). A target not judged fails
 * `--check` like a missed one, unless the run was told to go without it: `npm run bench -- webhook --check
 * --skip P3` (run.ts hands `--skip` on as BENCH_SKIP, which a bench run on its own reads too).
 */

export interface TargetJudgement {
  /** The target's id in docs/benchmarks.md (P1, P2, …): what `--skip` names. */
  id: string;
  /** What it asks, e.g. "render of 10,000 projects < 3000 ms". */
  target: string;
  /** false: this run cannot tell (`note` says why). */
  judged: boolean;
  /** Judged and met. */
  met: boolean;
  /** As measured, when something was. */
  value?: string;
  /** Why it was not judged. */
  note?: string;
}

export interface Judged {
  /** One line per target: MET, MISSED, or "not judged" (and whether it was skipped). */
  lines: string[];
  /** What `--check` fails on: the targets missed, and those not judged that were not skipped. */
  missed: string[];
}

/** The target ids to go without (`--skip P1,P3` / BENCH_SKIP=P1,P3), upper case. */
export function skippedTargets(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.BENCH_SKIP ?? '')
    .split(',')
    .map((s) => s.trim().toUpperCase())
    .filter(Boolean);
}

/** The lines to print and what `--check` fails on; `skip`: target ids whose not being judged is asked for. */
export function judgeTargets(targets: readonly TargetJudgement[], skip: readonly string[] = skippedTargets()): Judged {
  const skipping = new Set(skip.map((s) => s.toUpperCase()));
  const lines: string[] = [];
  const missed: string[] = [];
  for (const t of targets) {
    const name = `${t.id} ${t.target}`;
    if (t.judged) {
      lines.push(`${name}: ${t.value ?? '-'} — ${t.met ? 'MET' : 'MISSED'}`);
      if (!t.met) missed.push(`${name}: ${t.value ?? 'missed'}`);
      continue;
    }
    const why = `not judged (${t.note ?? 'not measured'})${t.value ? `; as measured ${t.value}` : ''}`;
    if (skipping.has(t.id.toUpperCase())) {
      lines.push(`${name}: ${why} — skipped (--skip ${t.id})`);
    } else {
      lines.push(`${name}: ${why} — fails --check unless skipped (--skip ${t.id})`);
      missed.push(`${name}: ${why}`);
    }
  }
  return { lines, missed };
}
