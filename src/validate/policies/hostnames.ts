/**
 * H1 in CEL: whether a hostname lies under the project's suffixes, why not, and what is allowed — the
 * same meaning as hostnameProblem (src/validate/allow-lists.ts). A hostname is lowercased where it is
 * read; the suffixes by the variable HOSTNAME_SUFFIXES, which every policy judging hostnames declares.
 */
import { combine, declare, listRule, newAndOld, quoted, type RuleParts, type Variable } from './cel.js';

const HOSTNAME_SUFFIXES: Variable = {
  name: 'hostnameSuffixes',
  expression: 'params.spec.hostnames.suffixes.map(s, s.lowerAscii())',
};

const WILDCARDS = 'params.spec.hostnames.wildcards';
const wildcard = (h: string) => `${h}.startsWith('*.')`;
const starAfterFirst = (h: string) => `${h}.substring(${wildcard(h)} ? 2 : 0).contains('*')`;
const under = (h: string) => `variables.hostnameSuffixes.exists(s, ${h} == s || ${h}.endsWith('.' + s))`;

/**
 * `h` is allowed: not empty (every hostname), a wildcard only with `wildcards` and only as the first
 * label, under a suffix (`*.x` is under s when x is s or under it: then it ends with `.s`).
 */
export const hostnameAllowed = (h: string): string =>
  `(${h} != '' && (!${wildcard(h)} || ${WILDCARDS}) && !${starAfterFirst(h)} && ${under(h)})`;

/** Why `h` is refused. */
const problem = (h: string): string =>
  `(${h} == '' ? 'no hostname matches every hostname' : ` +
  `${wildcard(h)} && !${WILDCARDS} ? 'wildcard hostnames are not allowed' : ` +
  `${starAfterFirst(h)} ? 'a wildcard is allowed only as the first label' : ` +
  `"it is outside the project's hostname suffixes")`;

/** `<label> "x" (why)`, or `<empty> (why)` for the empty hostname (every hostname). */
export const refusedHostname = (h: string, label: string, empty: string): string =>
  `(${h} == '' ? '${empty} (' : '${label} ' + ${quoted(h)} + ' (') + ${problem(h)} + ')'`;

export const ALLOWED_HOSTNAMES =
  `(variables.hostnameSuffixes.size() > 0 ? 'hostnames under ' + variables.hostnameSuffixes.join(', ') + ` +
  `(${WILDCARDS} ? ', wildcards included' : ', no wildcard') : 'no hostname (the project has no hostname suffix)')`;

/**
 * H1 over the hostnames `read` takes from an object (a list expression), each judged when an update adds it:
 * `named` says what one is in a message, `none` what an empty one means.
 */
export function hostnameListRule(
  list: string,
  read: (object: string) => string,
  refusal: { named: string; none: string; summary: string },
): RuleParts {
  return combine(
    declare(HOSTNAME_SUFFIXES, ...newAndOld(list, read, '[]')),
    listRule(list, hostnameAllowed, {
      rule: 'H1',
      what: (h) => refusedHostname(h, refusal.named, refusal.none),
      allowed: ALLOWED_HOSTNAMES,
      summary: refusal.summary,
    }),
  );
}
