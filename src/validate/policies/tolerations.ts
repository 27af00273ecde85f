/**
 * X8's tolerations in CEL (a pod's, and a device request's): a toleration with every field given, the
 * AllowList's test of it, and its text in messages — the same meaning as tolerationAllowed and
 * describeToleration (src/validate/allow-lists.ts).
 */
import { fieldOr } from './cel.js';

/** Tolerations every pod may carry: Kubernetes' own node conditions (not a device request's). */
export const NODE_CONDITION_PREFIX = 'node.kubernetes.io/';

/** Toleration `t` with every field (key '', operator Equal, value '', effect ''), as the AllowList holds them. */
export const fullToleration = (t: string): string =>
  `{'key': ${fieldOr(t, 'key', "''")}, 'operator': ${fieldOr(t, 'operator', "'Equal'")}, ` +
  `'value': ${fieldOr(t, 'value', "''")}, 'effect': ${fieldOr(t, 'effect', "''")}}`;

/** The fields of a toleration as CEL expressions (a normalized one's, or a pod's read with their defaults). */
export interface TolerationFields {
  key: string;
  operator: string;
  value: string;
  effect: string;
}

/** The fields of toleration `t` as the API server holds it, each with its default (fullToleration's values). */
export const tolerationFieldsOf = (t: string): TolerationFields => ({
  key: fieldOr(t, 'key', "''"),
  operator: fieldOr(t, 'operator', "'Equal'"),
  value: fieldOr(t, 'value', "''"),
  effect: fieldOr(t, 'effect', "''"),
});

/** An allowed toleration (`a`) has the same key, operator, value (with Equal), and no effect or the same. */
export const tolerationFieldsAllowed = (t: TolerationFields): string =>
  `params.spec.tolerations.exists(a, a.key == ${t.key} && a.operator == ${t.operator} && ` +
  `(a.operator != 'Equal' || a.value == ${t.value}) && (a.effect == '' || a.effect == ${t.effect}))`;

/** Normalized toleration `t` (fullToleration) is allowed. */
export const tolerationAllowed = (t: string): string =>
  tolerationFieldsAllowed({ key: `${t}.key`, operator: `${t}.operator`, value: `${t}.value`, effect: `${t}.effect` });

/** `dedicated=gpu:NoSchedule`, `dedicated:Exists`, `Exists (every taint)`. */
export const describeToleration = (t: string): string =>
  `(${t}.operator == 'Exists' ? (${t}.key != '' ? ${t}.key + ':Exists' : 'Exists (every taint)') : ` +
  `${t}.operator == 'Equal' ? ${t}.key + '=' + ${t}.value : ${t}.key + ' ' + ${t}.operator + ' ' + ${t}.value) + ` +
  `(${t}.effect != '' ? ':' + ${t}.effect : '')`;

/** The allowed tolerations, for messages. */
export const ALLOWED_TOLERATIONS =
  `(params.spec.tolerations.size() > 0 ? ` +
  `params.spec.tolerations.map(a, ${describeToleration('a')}).join(', ') : 'no toleration')`;
