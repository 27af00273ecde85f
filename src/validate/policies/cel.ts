/**
 * Builders of CEL text for the allow-list ValidatingAdmissionPolicies (allow-lists-policy.ts). Every rule
 * reads a value of the object and of the old object, keeps what the update adds, and names the first item
 * it refuses; these functions give those pieces one spelling.
 *
 * - A **list rule** (images, tolerations, hostnames, addresses) judges the items of the new object that
 *   the old object's same list lacks: `denied<Name>` are those the allow-list refuses; valid when empty.
 * - A **single-valued rule** (a class name, a type, nodeName, a node selector, a selector) is judged unless
 *   the old object had the same value: `<name>Kept`, or the allow-list admits the value.
 *
 * On CREATE `oldObject` is null: every value is new.
 */
import type { RuleId } from '../types.js';

export interface Variable {
  name: string;
  expression: string;
}

export interface Validation {
  expression: string;
  messageExpression: string;
  /** Shown when messageExpression fails. */
  message: string;
  reason: 'Forbidden';
}

/** What one rule of a policy adds: its variables (in order: later ones read earlier ones) and its validations. */
export interface RuleParts {
  variables: Variable[];
  validations: Validation[];
}

/** A CEL string literal. */
const str = (text: string): string => `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

/** `"value"` in a message (the offline form's JSON.stringify of a string). */
export const quoted = (value: string): string => `'"' + ${value} + '"'`;

/** `base.field` when the field is there, else `fallback`. */
export const fieldOr = (base: string, field: string, fallback: string): string =>
  `(has(${base}.${field}) ? ${base}.${field} : ${fallback})`;

const capitalized = (name: string) => `${name.charAt(0).toUpperCase()}${name.slice(1)}`;

/** The old value's variable name: priorityClass → oldPriorityClass. */
export const oldName = (name: string): string => `old${capitalized(name)}`;

/** Rule parts that only declare variables. */
export const declare = (...variables: Variable[]): RuleParts => ({ variables, validations: [] });

/**
 * The variable `name` read from the object by `read('object')`, and `old<Name>` read from the old object
 * (`none` on CREATE). `read` must guard every optional field itself.
 */
export function newAndOld(name: string, read: (object: string) => string, none: string): Variable[] {
  return [
    { name, expression: read('object') },
    { name: oldName(name), expression: `oldObject == null ? ${none} : (${read('oldObject')})` },
  ];
}

/** Whether the old object had the same value of variables.<name> (false on CREATE). */
export const kept = (name: string): string => `(oldObject != null && variables.${name} == variables.${oldName(name)})`;

/** The object as messages name it: `Pod payments-batch/web`. */
export const SUBJECT: Variable = {
  name: 'subject',
  expression: "request.kind.kind + ' ' + request.namespace + '/' + object.metadata.name",
};

/** What a refusal says: `what` and `allowed` are CEL string expressions, `summary` the fixed fallback text. */
export interface Refusal {
  rule: RuleId;
  what: string;
  allowed: string;
  summary: string;
}

/** `[RULE] Kind ns/name: <what> is not allowed for project <p>; allowed: <allowed>`, as a CEL string expression. */
function message(rule: RuleId, what: string, allowed: string): string {
  return `'[${rule}] ' + variables.subject + ': ' + ${messageTail(what, allowed)}`;
}

/** `<what> is not allowed for project <p>; allowed: <allowed>` (CEL). */
const messageTail = (what: string, allowed: string): string =>
  `${what} + ' is not allowed for project ' + params.spec.project + '; allowed: ' + ${allowed}`;

/** A validation refusing with `refusal` when `expression` is false. */
export function validation(expression: string, refusal: Refusal): Validation {
  return {
    expression,
    messageExpression: message(refusal.rule, refusal.what, refusal.allowed),
    message: `[${refusal.rule}] ${refusal.summary}`,
    reason: 'Forbidden',
  };
}

/**
 * A validation refusing with `refusal` when `ok` is false, whose message costs next to nothing when `ok`
 * holds. The API server evaluates every messageExpression of a policy on every request it judges, the
 * admitted ones too, in an activation of its own (whose variables are evaluated afresh: none is shared with
 * the validations'); so the message tests `ok` again and builds its text only when it is false. The text
 * is message()'s.
 */
export function guardedValidation(ok: string, refusal: Refusal): Validation {
  return guardedChecks(refusal.rule, refusal.summary, [{ ok, refusal }]);
}

/** A check of a rule and its refusal (guardedChecks). */
export interface GuardedCheck {
  ok: string;
  refusal: Pick<Refusal, 'what' | 'allowed'>;
}

/**
 * One validation for several checks of rule `rule`, refusing with the first failing check's refusal (as
 * many validations in that order would: the API server names the first refusing one). One validation
 * instead of several saves an evaluation of the validation and one of its message on every request. The
 * message is `''` when every check holds (the API server reads it only after a refusal), so an admitted
 * request builds no text: each refusal branch starts its own message with the rule id and the subject.
 */
export function guardedChecks(rule: RuleId, summary: string, checks: readonly GuardedCheck[]): Validation {
  const first = (rest: readonly GuardedCheck[]): string => {
    const [check, ...others] = rest;
    if (!check) return "''";
    // The middle of a CEL conditional is not a conditional itself: parenthesized.
    return `(${check.ok}) ? (${first(others)}) : ${message(rule, check.refusal.what, check.refusal.allowed)}`;
  };
  return {
    expression: checks.map((c) => `(${c.ok})`).join(' && '),
    messageExpression: first(checks),
    message: `[${rule}] ${summary}`,
    reason: 'Forbidden',
  };
}

/** A list joined with ', ', or `none` when empty (CEL). */
export const listed = (list: string, none: string): string =>
  `(${list}.size() > 0 ? ${list}.join(', ') : ${str(none)})`;

/** A name-list parameter (`{any, names}`) admits `value`. */
export const nameAllowed = (param: string, value: string): string =>
  `(params.spec.${param}.any || ${value} in params.spec.${param}.names)`;

/** A list rule's refusal: `what` names the refused item. */
export interface ItemRefusal extends Omit<Refusal, 'what'> {
  what: (item: string) => string;
}

/**
 * A list rule: `denied<List>` are the items of variables.<list> that variables.old<List> lacks and
 * `allowed(x)` refuses (`x` is the item; `allowed` names its own comprehension variables otherwise);
 * valid when there are none, else the first one is named.
 */
export function listRule(list: string, allowed: (item: string) => string, refusal: ItemRefusal): RuleParts {
  const denied = `denied${capitalized(list)}`;
  const added = `!(x in variables.${oldName(list)})`;
  return {
    variables: [{ name: denied, expression: `variables.${list}.filter(x, ${added} && !(${allowed('x')}))` }],
    validations: [
      validation(`variables.${denied}.size() == 0`, { ...refusal, what: refusal.what(`variables.${denied}[0]`) }),
    ],
  };
}

/** A single-valued rule on variables.<name>: valid when kept from the old object or `allowed(value)`. */
export function valueRule(name: string, allowed: (value: string) => string, refusal: Refusal): RuleParts {
  return { variables: [], validations: [validation(`${kept(name)} || ${allowed(`variables.${name}`)}`, refusal)] };
}

/** Concatenates rule parts in order. */
export function combine(...parts: RuleParts[]): RuleParts {
  return {
    variables: parts.flatMap((p) => p.variables),
    validations: parts.flatMap((p) => p.validations),
  };
}
