/**
 * The ValidatingAdmissionPolicy `tenantgate-fleet-shares` and its binding (installed on the hub by the
 * chart's hub mode): inside the hub's API server, it re-checks every write of a FleetBudget's status
 * against what `src/fleet/shares.ts` lets a member do (docs/adr/0039-fleet-budgets.md,
 * "Who may write what"), and refuses a spec whose budget is below what the members hold (F2
 * below-shares). docs/adr/0039-fleet-budgets.md explains the choices.
 *
 * Quantities are compared with Kubernetes' CEL quantity library (`quantity()`, `add`, `sub`,
 * `compareTo`), exactly, never as floats. CEL has no fold, so Σ shares per resource is a balanced tree
 * of `add` over the first MAX_FLEET_MEMBERS entries (the CRD allows no more); depth stays at 6.
 *
 * `make crd` (hack/generate-crd.ts) writes it to FLEET_POLICY_PATH; a unit test fails when the
 * committed copy differs.
 */
import { denyingPolicy, renderPolicyYaml, tenantgateResources } from '../validate/policies/denying-policy.js';
import { API_GROUP } from '../validate/types.js';
import { MAX_FLEET_MEMBERS } from './fleet-budget-crd.js';
import { FLEET_FINALIZER, FLEET_NAMESPACE, FLEET_PLURAL } from './fleet-budget-object.js';

export const FLEET_POLICY_NAME = 'tenantgate-fleet-shares';
export const FLEET_POLICY_PATH = 'charts/tenantgate/files/fleet/fleet-shares-policy.yaml';
/** The user name prefix of a member cluster's ServiceAccount on the hub; the rest is the cluster name. */
export const MEMBER_USER_PREFIX = `system:serviceaccount:${FLEET_NAMESPACE}:member-`;
/** The custom RBAC verb on fleetbudgets that lets a subject write status.released (Role tenantgate-fleet-operator). */
const RELEASE_VERB = 'release';

const HEADER =
  '# generated from src/fleet/fleet-shares-policy.ts by hack/generate-crd.ts, do not edit (regenerate with `make ' +
  'crd`)\n';

const ZERO = "quantity('0')";
/** An entry of a members map, or {} when it has none. */
const entry = (members: string, name: string) => `(${name} in ${members} ? ${members}[${name}] : {})`;
/** The quantity of resource `r` in field `field` (share, lendable) of entry expression `e`, 0 when absent. */
const q = (e: string, field: string, r: string) =>
  `(has(${e}.${field}) && ${r} in ${e}.${field} ? quantity(string(${e}.${field}[${r}])) : ${ZERO})`;
/** The resource names in an entry's share and lendable (may repeat; used with all()). */
const keysOf = (e: string) =>
  `((has(${e}.share) ? ${e}.share.map(k, k) : []) + (has(${e}.lendable) ? ${e}.lendable.map(k, k) : []))`;

/** The resources of entry `e` whose share is negative or whose lendable is negative or above the share, each once. */
function badResources(e: string): string {
  const bad = (r: string) =>
    `(${q(e, 'share', r)}.compareTo(${ZERO}) < 0 || ${q(e, 'lendable', r)}.compareTo(${ZERO}) < 0 || ` +
    `${q(e, 'lendable', r)}.compareTo(${q(e, 'share', r)}) > 0)`;
  return (
    `((has(${e}.lendable) ? ${e}.lendable.map(k, k) : []).filter(r, ${bad('r')}) + (has(${e}.share) ? ${e}` +
    `.share.map(k, k) : []).filter(r, !(has(${e}.lendable) && r in ${e}.lendable) && ${bad('r')}))`
  );
}

const NEW = 'variables.newMembers';
const OLD = 'variables.oldMembers';
const MINE = entry(NEW, 'variables.member');
const MINE_OLD = entry(OLD, 'variables.member');
const OBJECT = "'FleetBudget ' + object.metadata.namespace + '/' + object.metadata.name";

/** Σ over the first MAX_FLEET_MEMBERS entries of status.members of share[r], as a balanced tree of add(). */
function sharesSum(r: string): string {
  const terms = Array.from(
    { length: MAX_FLEET_MEMBERS },
    (_, i) =>
      `(variables.shareLists.size() > ${i} && ${r} in variables.shareLists[${i}] ? ` +
      `quantity(string(variables.shareLists[${i}][${r}])) : ${ZERO})`,
  );
  const tree = (list: string[]): string => {
    if (list.length === 1) return list[0]!;
    const half = Math.ceil(list.length / 2);
    return `${tree(list.slice(0, half))}.add(${tree(list.slice(half))})`;
  };
  return tree(terms);
}

/** Who holds some of resource r, as "prod-eu 12, prod-us 4" (for messages). */
const holders = (r: string) =>
  `${NEW}.map(n, n).filter(n, ${q(entry(NEW, 'n'), 'share', r)}.compareTo(${ZERO}) > 0).map(n, n + ' ' + string(` +
  `${NEW}[n].share[${r}])).join(', ')`;

interface Variable {
  name: string;
  expression: string;
}
interface Validation {
  expression: string;
  messageExpression: string;
  reason: 'Forbidden' | 'Invalid';
}

const statusWrite = "(has(request.subResource) && request.subResource == 'status')";
const specWrite = "!(has(request.subResource) && request.subResource == 'status')";

export const POLICY_VARIABLES: Variable[] = [
  // The member cluster writing, from its ServiceAccount's user name; '' for anyone else.
  {
    name: 'member',
    expression:
      `request.userInfo.username.startsWith('${MEMBER_USER_PREFIX}') ? request.userInfo.username.substring(` +
      `${MEMBER_USER_PREFIX.length}) : ''`,
  },
  { name: 'newMembers', expression: 'has(object.status) && has(object.status.members) ? object.status.members : {}' },
  {
    name: 'oldMembers',
    expression:
      'oldObject != null && has(oldObject.status) && has(oldObject.status.members) ? oldObject.status.members : {}',
  },
  {
    name: 'newReleased',
    expression: 'has(object.status) && has(object.status.released) ? object.status.released : {}',
  },
  {
    name: 'oldReleased',
    expression:
      'oldObject != null && has(oldObject.status) && has(oldObject.status.released) ? oldObject.status.released : {}',
  },
  // Every entry's share map (in one order), for the sum.
  { name: 'shareLists', expression: `${NEW}.map(n, has(${NEW}[n].share) ? ${NEW}[n].share : {})` },
  // Budgeted resources whose shares sum above the budget. For a status write: the new shares against
  // the spec; for a spec write: the stored shares against the new budget.
  {
    name: 'overBudget',
    expression:
      `object.spec.budget.map(r, r).filter(r, ${NEW}.size() > ${MAX_FLEET_MEMBERS} || ${sharesSum('r')}` +
      `.compareTo(quantity(string(object.spec.budget[r]))) > 0)`,
  },
  // Members holding some share of anything.
  {
    name: 'holding',
    expression:
      `${NEW}.map(n, n).filter(n, ${keysOf(entry(NEW, 'n'))}.exists(r, ${q(entry(NEW, 'n'), 'share', 'r')}` +
      `.compareTo(${ZERO}) > 0))`,
  },
  // Other members whose entry changed otherwise than by giving up offered room: a new entry (a member
  // creates none but its own), or share and lendable not falling together, or below what was offered.
  {
    name: 'othersChanged',
    expression:
      `(${OLD}.map(n, n) + ${NEW}.map(n, !(n in ${OLD}), n)).filter(n, n != variables.member).filter(n, !(n in ` +
      `${OLD}) || ` +
      `!(${keysOf(entry(NEW, 'n'))} + ${keysOf(entry(OLD, 'n'))}).all(r, ` +
      `${q(entry(NEW, 'n'), 'lendable', 'r')}.compareTo(${ZERO}) >= 0 && ` +
      (`${q(entry(NEW, 'n'), 'share', 'r')}.sub(${q(entry(OLD, 'n'), 'share', 'r')}).compareTo(` +
        `${q(entry(NEW, 'n'), 'lendable', 'r')}.sub(${q(entry(OLD, 'n'), 'lendable', 'r')})) == 0 && `) +
      `${q(entry(NEW, 'n'), 'share', 'r')}.compareTo(${q(entry(OLD, 'n'), 'share', 'r')}) <= 0) || ` +
      (`(has(${entry(NEW, 'n')}.lastRequest) ? ${entry(NEW, 'n')}.lastRequest : '') != (has(${entry(OLD, 'n')}` +
        `.lastRequest) ? ${entry(OLD, 'n')}.lastRequest : ''))`),
  },
  // The writer's resources whose share grew.
  {
    name: 'grown',
    expression: `${keysOf(MINE)}.filter(r, ${q(MINE, 'share', 'r')}.compareTo(${q(MINE_OLD, 'share', 'r')}) > 0)`,
  },
  // ... of which beyond its bound or not fleet-budgeted at all.
  {
    name: 'beyondBound',
    expression:
      `variables.grown.filter(r, !(r in object.spec.budget) || (has(object.spec.bounds) && variables.member in ` +
      `object.spec.bounds && r in object.spec.bounds[variables.member] && ` +
      `${q(MINE, 'share', 'r')}.compareTo(quantity(string(object.spec.bounds[variables.member][r]))) > 0))`,
  },
  // Every entry's resources where the share is negative or lendable is negative or above the share,
  // as "eu requests.cpu" (each resource once: lendable's keys, then share's keys not among them).
  {
    name: 'badEntries',
    expression:
      `${NEW}.map(n, ${badResources(entry(NEW, 'n'))}.map(r, n + ' ' + r)).filter(l, l.size() > 0).map(l, ` +
      `l.join(', '))`,
  },
  {
    name: 'isOperator',
    expression:
      `authorizer.group('${API_GROUP}').resource('${FLEET_PLURAL}` +
      `').namespace(object.metadata.namespace).name(object.metadata.name).check('${RELEASE_VERB}').allowed()`,
  },
  { name: 'releasedChanged', expression: `${statusWrite} && variables.newReleased != variables.oldReleased` },
];

const M = "' + variables.member + '";

export const POLICY_VALIDATIONS: Validation[] = [
  // --- spec writes (Argo CD applying git, an operator removing the finalizer) ---
  {
    expression: `${statusWrite} || variables.overBudget.size() == 0`,
    messageExpression:
      `'[F2] ' + ${OBJECT} + ': spec.budget is below what the members hold (below-shares): ' + ` +
      `variables.overBudget.map(r, r + ' ' + string(object.spec.budget[r]) + ' < held by ' + ${holders('r')}` +
      `).join('; ') + '; the members give back unused share on their own; lower the budget once they have'`,
    reason: 'Invalid',
  },
  {
    expression:
      `${statusWrite} || !(has(oldObject.metadata.finalizers) && oldObject.metadata.finalizers.exists(f, f == '` +
      `${FLEET_FINALIZER}')) || (has(object.metadata.finalizers) && object.metadata.finalizers.exists(f, f == '` +
      `${FLEET_FINALIZER}')) || variables.holding.size() == 0`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': the finalizer ${FLEET_FINALIZER} stays while members hold a share (' + ` +
      `variables.holding.join(', ') + '); wait until they give it back, or release a member that is gone (kubectl ` +
      `tenantgate fleet release)'`,
    reason: 'Forbidden',
  },
  // --- status writes by a member ---
  {
    expression: `${specWrite} || variables.member == '' || !(variables.member in variables.oldReleased)`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': member ${M} was released by an operator; its writes are refused for good (register ` +
      `the cluster again under a new name)'`,
    reason: 'Forbidden',
  },
  {
    expression:
      `${specWrite} || variables.member == '' || variables.member in object.spec.members || (variables.member in ` +
      `${OLD} && variables.grown.size() == 0)`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': ${M} is not in spec.members (' + object.spec.members.join(', ') + '); a cluster ` +
      `outside the fleet may only lower a share it still holds'`,
    reason: 'Forbidden',
  },
  {
    expression: `${specWrite} || variables.member == '' || variables.othersChanged.size() == 0`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': member ${M} may change only its own entry; the entries of ' + ` +
      `variables.othersChanged.join(', ') + ' changed otherwise than by taking room they offered (share and ` +
      `lendable falling together, lastRequest kept)'`,
    reason: 'Forbidden',
  },
  {
    expression: `${specWrite} || variables.member == '' || variables.beyondBound.size() == 0`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': the share of ${M} grows beyond its bound or outside the fleet budget: ' + ` +
      `variables.beyondBound.map(r, r + ' ' + string(${MINE}.share[r]) + (r in object.spec.budget ? ' > bound ' + ` +
      `string(object.spec.bounds[variables.member][r]) + ' (spec.bounds[${M}])' : ' (not in ` +
      `spec.budget)')).join(', ')`,
    reason: 'Forbidden',
  },

  {
    expression: `${specWrite} || variables.member == '' || !variables.releasedChanged`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': member ${M} may not change status.released; only an operator releases a member ` +
      `(kubectl tenantgate fleet release)'`,
    reason: 'Forbidden',
  },
  // --- status writes by anyone ---
  {
    expression: `${specWrite} || variables.badEntries.size() == 0`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': every entry must keep 0 <= lendable <= share: ' + variables.badEntries.join('; ') ` +
      `+ (variables.member != '' ? ' in a write by ${M}' : '')`,
    reason: 'Invalid',
  },
  {
    expression: `${specWrite} || variables.overBudget.size() == 0`,
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': the shares would sum above the fleet budget (' + variables.overBudget.map(r, r + ' ` +
      `' + string(object.spec.budget[r]) + ', held by ' + ${holders('r')}).join('; ') + ')' + (variables.member != ` +
      `'' ? ' in a write by ${M}' : '')`,
    reason: 'Forbidden',
  },
  {
    expression:
      `${specWrite} || !variables.releasedChanged || (variables.member == '' && variables.isOperator && ` +
      (`variables.oldReleased.map(n, n).all(n, n in variables.newReleased && variables.newReleased[n] == ` +
        `variables.oldReleased[n]) && `) +
      (`variables.newReleased.map(n, n).all(n, n in variables.oldReleased || (variables.newReleased[n].by == ` +
        `request.userInfo.username && !(n in ${NEW}))))`),
    messageExpression:
      `'[F3] ' + ${OBJECT} + ': ' + request.userInfo.username + ' may not write status.released this way: only a ` +
      `subject allowed the verb ${RELEASE_VERB} on ${FLEET_PLURAL} (Role tenantgate-fleet-operator) adds a ` +
      `release, recorded by its own user name, of a member without an entry; a release is never changed or removed'`,
    reason: 'Forbidden',
  },
];

function fleetSharesPolicy(): Record<string, unknown>[] {
  return denyingPolicy({
    name: FLEET_POLICY_NAME,
    component: 'fleet-hub',
    matchConstraints: { resourceRules: [tenantgateResources(['UPDATE'], [FLEET_PLURAL, `${FLEET_PLURAL}/status`])] },
    variables: POLICY_VARIABLES,
    validations: POLICY_VALIDATIONS,
  });
}

export function renderFleetPolicyYaml(): string {
  return renderPolicyYaml(HEADER, fleetSharesPolicy());
}
