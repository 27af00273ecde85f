/**
 * Whether a deleting Project's namespaces that hold something may go (ADR 0096 step 4): the Project
 * carries `tenantgate.io/deletion-confirmed` equal to its own uid, so a confirmation never carries
 * over to a re-created Project of the same name. Pure.
 */
import type { Project } from '../../validate/types.js';
import { ANNOTATION_DELETION_CONFIRMED } from './names.js';

export function deletionConfirmed(project: Project): boolean {
  const uid = project.metadata.uid;
  const given = project.metadata.annotations?.[ANNOTATION_DELETION_CONFIRMED];
  return uid !== undefined && uid !== '' && given === uid;
}
