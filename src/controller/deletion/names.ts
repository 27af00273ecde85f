/**
 * The names ADR 0096 fixes (docs/adr/0096-deletion-loses-no-data.md): annotations, labels, conditions,
 * the breaker's ConfigMap.
 */
export const ANNOTATION_DELETION_CONFIRMED = 'tenantgate.io/deletion-confirmed';
export const LABEL_RELEASED_FROM = 'tenantgate.io/released-from';
export const ANNOTATION_RELEASED_AT = 'tenantgate.io/released-at';
export const CONDITION_DELETION_CONFIRMED = 'DeletionConfirmed';
export const CONDITION_DELETION_PAUSED = 'DeletionPaused';
export const REASON_AWAITING_CONFIRMATION = 'AwaitingConfirmation';
export const REASON_BREAKER_TRIPPED = 'BreakerTripped';
export const EVENT_AWAITING_CONFIRMATION = 'DeletionAwaitingConfirmation';
export const EVENT_BREAKER_TRIPPED = 'DeletionBreakerTripped';
export const BREAKER_CONFIGMAP = 'tenantgate-deletion-breaker';
export const PROJECT_CRD_NAME = 'projects.tenantgate.io';
