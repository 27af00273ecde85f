/**
 * `kubectl tenantgate deletions`: the Projects being deleted and where each stands (docs/deletion.md):
 * paused by the breaker (D2), waiting for a platform admin's confirmation with what each namespace
 * holds and the command that confirms, or cascading. Pure text from the Projects' conditions, which the
 * controller writes (docs/adr/0096-deletion-loses-no-data.md).
 */
import { ANNOTATION_DELETION_CONFIRMED } from '../controller/deletion/names.js';
import type { Project } from '../validate/types.js';

export interface DeletionRow {
  project: string;
  /** Paused (the breaker), AwaitingConfirmation, or Deleting. */
  state: 'Paused' | 'AwaitingConfirmation' | 'Deleting';
  since?: string;
  message: string;
  /** The command a platform admin runs to confirm (AwaitingConfirmation only). */
  confirm?: string;
}

export function deletionRows(projects: readonly Project[]): DeletionRow[] {
  const rows: DeletionRow[] = [];
  for (const p of projects) {
    if (!p.metadata.deletionTimestamp) continue;
    const name = p.metadata.name ?? '';
    const conditions = p.status?.conditions ?? [];
    const paused = conditions.find((c) => c.type === 'DeletionPaused' && c.status === 'True');
    const waiting = conditions.find((c) => c.type === 'DeletionConfirmed' && c.status === 'False');
    const remaining = conditions.find((c) => c.type === 'NamespacesRemaining');
    const since = p.metadata.deletionTimestamp;
    if (paused) rows.push({ project: name, state: 'Paused', since, message: paused.message });
    else if (waiting)
      rows.push({
        project: name,
        state: 'AwaitingConfirmation',
        since,
        message: waiting.message,
        confirm: `kubectl annotate project ${name} ${ANNOTATION_DELETION_CONFIRMED}=${p.metadata.uid ?? ''}`,
      });
    else rows.push({ project: name, state: 'Deleting', since, message: remaining?.message ?? 'being deleted' });
  }
  return rows.sort((a, b) => (a.project < b.project ? -1 : a.project > b.project ? 1 : 0));
}

export function deletionsText(rows: readonly DeletionRow[]): string {
  if (rows.length === 0) return 'No Project is being deleted.\n';
  const out: string[] = [];
  for (const r of rows) {
    out.push(`${r.project}: ${r.state} (deleting since ${r.since ?? 'unknown'})`, `  ${r.message}`);
    if (r.confirm) out.push(`  a platform admin confirms with: ${r.confirm}`);
    if (r.state === 'Paused') out.push('  an operator resumes with: kubectl tenantgate resume-deletions');
  }
  return out.join('\n') + '\n';
}
