/**
 * The share record of one fleet-budgeted Project (docs/adr/0039-fleet-budgets.md): the
 * fleet budget, each member cluster's share of it, what a member offers to lend, and the transitions
 * a write to the hub may make. Pure: no I/O, no clock. Each transition takes a record and returns a
 * new one or a typed refusal that names the clusters holding the room; the hub applies a result with
 * a compare-and-swap write (the resourceVersion it read as precondition), so a result computed from
 * a record that is no longer current never lands.
 *
 * Enforced on fleet members: the webhook's growth beyond a member's enforced limit applies
 * `requestGrowth` on the hub (src/webhook/headroom/fleet-growth.ts through src/fleet/hub-transaction.ts), and the
 * member controller's give-back and offer loop the other transitions (src/controller/fleet-loop.ts).
 * On the hub, `kubectl tenantgate fleet release` applies `releaseMember` (src/kubectl/fleet-release.ts),
 * and the API server re-checks every member write with the admission policy of
 * src/fleet/fleet-shares-policy.ts (docs/adr/0039-fleet-budgets.md).
 *
 * The demarcation rules this module encodes:
 * - the pool is derived, never stored: pool = budget − Σ shares, so "Σ shares ≤ budget" is "pool ≥ 0";
 * - a member's share rises only by taking room from the pool or from what other members lend, in one
 *   record write, and never above the member's per-cluster upper bound;
 * - a share falls only by its owner (give back, offer) — or, for the part its owner offered, by
 *   another member taking the offer: an offer is room the owner has already stopped enforcing;
 * - every write carries an idempotency key: the same key applied twice changes nothing the second time.
 */
import { Quantity } from '../quantity/quantity.js';
import type { Resources } from '../validate/types.js';

const ZERO = Quantity.zero();

/** One member's entry in the hub's share record. */
export interface MemberShare {
  /** The member's limit: the most it may enforce (with `lendable` subtracted). */
  readonly share: Resources;
  /** The part of `share` the member no longer enforces and lets other members take (≤ share). */
  readonly lendable: Resources;
  /** The idempotency key of the last write of this member that the record applied. */
  readonly lastRequest?: string;
}

export interface ShareRecord {
  /** The fleet budget (`spec.fleet.quota.hard`). */
  readonly budget: Resources;
  /** The member clusters (`spec.fleet.clusters`): only they may be granted room. */
  readonly members: readonly string[];
  /** Per-cluster upper bounds of a member's share (`spec.clusters.<name>.quota.hard`, else `spec.quota.hard`). */
  readonly bounds: ReadonlyMap<string, Resources>;
  /** Members with an entry; a member without one holds nothing. */
  readonly shares: ReadonlyMap<string, MemberShare>;
  /** Members an operator released: their entries are gone and their writes are refused. */
  readonly released: ReadonlySet<string>;
}

/** Another cluster's hold on a resource, for a refusal's message. */
export interface Holder {
  readonly cluster: string;
  readonly share: Quantity;
  readonly lendable: Quantity;
}

/** Why a member could not get `need` of one resource. */
export interface Shortfall {
  readonly resource: string;
  readonly need: Quantity;
  /** The requester's share before the request. */
  readonly share: Quantity;
  /** The requester's upper bound, when it declares one for the resource. */
  readonly bound?: Quantity;
  /** budget − Σ shares (negative after the budget was lowered below what members hold). */
  readonly pool: Quantity;
  /** Σ of what other members lend. */
  readonly lendable: Quantity;
  /** 'bound': the upper bound leaves less than `need`; 'room': pool and offers together hold less. */
  readonly limitedBy: 'bound' | 'room';
  /** Every other member holding some of the resource, the largest share first. */
  readonly holders: readonly Holder[];
}

type RefusalReason =
  /** requestGrowth: the pool and the offers of other members cannot cover the need (see shortfalls). */
  | 'no-room'
  /** The cluster is not in the fleet (`spec.fleet.clusters`). */
  | 'not-a-member'
  /** An operator released the member: it holds nothing and may write nothing. */
  | 'released'
  /** A resource the fleet budget does not name. */
  | 'not-fleet-budgeted'
  /** giveBack/offer: more than the member holds unlent; withdrawOffer: more than it lends. */
  | 'more-than-held'
  /** setBudget: the new budget is below what the members hold. */
  | 'below-shares';

export interface ShareRefusal {
  readonly ok: false;
  readonly reason: RefusalReason;
  readonly member: string;
  /** For 'no-room' and 'below-shares': per resource what is missing and who holds it. */
  readonly shortfalls: readonly Shortfall[];
  /** For 'not-fleet-budgeted' and 'more-than-held': the resources concerned. */
  readonly resources: readonly string[];
}

export interface Applied {
  readonly ok: true;
  readonly record: ShareRecord;
  /** True when the record had already applied this request id: nothing changed. */
  readonly duplicate: boolean;
}

export interface Granted extends Applied {
  /**
   * What the member may enforce more (share − lendable grew by it; empty for a duplicate): its own offer taken back
   * first, then the pool, then others' offers.
   */
  readonly granted: Resources;
  /** The part of `granted` that was the member's own offer (its share did not grow by it). */
  readonly fromOwnOffer: Resources;
  readonly fromPool: Resources;
  /** Member → what was taken from its offer. */
  readonly fromLenders: ReadonlyMap<string, Resources>;
}

export type GrowthResult = Granted | ShareRefusal;
export type Transition = Applied | ShareRefusal;

export interface Request {
  /** The idempotency key: unique per write a member means to make (a retry reuses it). */
  readonly id: string;
  readonly amount: Resources;
}

export interface GrowthRequest {
  readonly id: string;
  /** What the share must grow by at least, per resource. */
  readonly need: Resources;
  /** What it should grow by if there is room (a chunk, so the next growths need no write); ≥ need. */
  readonly want?: Resources;
}

// --- quantities ------------------------------------------------------------------------------

const at = (r: Resources | undefined, resource: string): Quantity => r?.get(resource) ?? ZERO;
const max = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) >= 0 ? a : b);
const min = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) <= 0 ? a : b);

function withAmount(r: Resources, resource: string, value: Quantity): Resources {
  const out = new Map(r);
  if (value.isZero()) out.delete(resource);
  else out.set(resource, value);
  return out;
}

function positive(r: Resources): Array<[string, Quantity]> {
  return [...r].filter(([, v]) => v.sign() > 0).sort(([a], [b]) => a.localeCompare(b));
}

// --- reading the record ------------------------------------------------------------------------

const NO_SHARE: MemberShare = { share: new Map(), lendable: new Map() };

export function emptyShareRecord(
  budget: Resources,
  members: readonly string[],
  bounds: ReadonlyMap<string, Resources> = new Map(),
): ShareRecord {
  return { budget, members: [...members], bounds, shares: new Map(), released: new Set() };
}

export function memberShare(record: ShareRecord, member: string): MemberShare {
  return record.shares.get(member) ?? NO_SHARE;
}

/** budget − Σ shares per budgeted resource (negative when the budget was lowered below the shares). */
export function poolOf(record: ShareRecord): Resources {
  const pool = new Map<string, Quantity>();
  for (const [resource, limit] of record.budget) {
    let left = limit;
    for (const entry of record.shares.values()) left = left.sub(at(entry.share, resource));
    pool.set(resource, left);
  }
  return pool;
}

/** share − lendable: the most the member may enforce, per resource of the fleet budget. */
export function enforceableLimit(record: ShareRecord, member: string): Resources {
  const entry = memberShare(record, member);
  const out = new Map<string, Quantity>();
  for (const resource of record.budget.keys())
    out.set(resource, at(entry.share, resource).sub(at(entry.lendable, resource)));
  return out;
}

/** Every other member holding some of `resource`, the largest share first (then by name). */
export function holdersOf(record: ShareRecord, resource: string, except?: string): Holder[] {
  const out: Holder[] = [];
  for (const [cluster, entry] of record.shares) {
    if (cluster === except) continue;
    const share = at(entry.share, resource);
    if (share.sign() > 0) out.push({ cluster, share, lendable: at(entry.lendable, resource) });
  }
  return out.sort((a, b) => b.share.cmp(a.share) || a.cluster.localeCompare(b.cluster));
}

/**
 * What is wrong with a record, in words (empty when nothing is): Σ shares ≤ budget, 0 ≤ lendable ≤
 * share, no negative share, no entry for a released member.
 */
export function shareRecordProblems(record: ShareRecord): string[] {
  const out: string[] = [];
  for (const [resource, left] of poolOf(record)) {
    if (left.sign() < 0)
      out.push(
        `${resource}: the shares sum to ${record.budget.get(resource)!.sub(left).toString()}, above the fleet ` +
          `budget ${record.budget.get(resource)!.toString()}`,
      );
  }
  for (const [cluster, entry] of record.shares) {
    if (record.released.has(cluster)) out.push(`${cluster} was released but still has an entry`);
    for (const [resource, share] of entry.share)
      if (share.sign() < 0) out.push(`${cluster}: share of ${resource} is negative (${share.toString()})`);
    for (const [resource, lent] of entry.lendable) {
      if (lent.sign() < 0) out.push(`${cluster}: lendable ${resource} is negative (${lent.toString()})`);
      if (lent.cmp(at(entry.share, resource)) > 0)
        out.push(
          `${cluster}: lends ${resource} ${lent.toString()}, more than its share ` +
            `${at(entry.share, resource).toString()}`,
        );
    }
  }
  return out;
}

// --- transitions --------------------------------------------------------------------------------

function refuse(
  member: string,
  reason: RefusalReason,
  extra: { shortfalls?: Shortfall[]; resources?: string[] } = {},
): ShareRefusal {
  return { ok: false, reason, member, shortfalls: extra.shortfalls ?? [], resources: extra.resources ?? [] };
}

/**
 * The refusals every member write shares: released, not a member (unless `leaving` is allowed), a
 * resource outside the budget.
 */
function precheck(
  record: ShareRecord,
  member: string,
  amounts: Resources,
  allowFormerMember: boolean,
): ShareRefusal | undefined {
  if (record.released.has(member)) return refuse(member, 'released');
  if (!record.members.includes(member) && !(allowFormerMember && record.shares.has(member)))
    return refuse(member, 'not-a-member');
  const outside = [...amounts.keys()].filter((r) => !record.budget.has(r)).sort();
  if (outside.length > 0) return refuse(member, 'not-fleet-budgeted', { resources: outside });
  return undefined;
}

function withEntry(record: ShareRecord, member: string, entry: MemberShare): ShareRecord {
  const shares = new Map(record.shares);
  shares.set(member, entry);
  return { ...record, shares };
}

/**
 * A member asks for `need` more of what it may enforce, share − lendable (and up to `want`). Room comes
 * from its own offer first (taking it back grows no share), then from the pool, then from other members'
 * offers (the largest offer first), all in the one returned record, so one CAS write moves it. Refused, naming who
 * holds the room, when the pool and the offers hold less than `need` or the member's upper bound would be passed.
 */
export function requestGrowth(record: ShareRecord, member: string, request: GrowthRequest): GrowthResult {
  const entry = memberShare(record, member);
  const denied = precheck(record, member, new Map([...request.need, ...(request.want ?? new Map())]), false);
  if (denied) return denied;
  if (entry.lastRequest === request.id)
    return {
      ok: true,
      record,
      duplicate: true,
      granted: new Map(),
      fromOwnOffer: new Map(),
      fromPool: new Map(),
      fromLenders: new Map(),
    };

  const pool = poolOf(record);
  const bound = record.bounds.get(member);
  const shortfalls: Shortfall[] = [];
  const grants = new Map<string, Quantity>();
  for (const [resource, need] of positive(request.need)) {
    const share = at(entry.share, resource);
    const poolLeft = pool.get(resource)!;
    let lendable = ZERO;
    for (const [other, e] of record.shares) if (other !== member) lendable = lendable.add(at(e.lendable, resource));
    // The member's own offer comes back first: taking it back grows what it may enforce without growing its share.
    const own = at(entry.lendable, resource);
    const room = own.add(max(poolLeft, ZERO)).add(lendable);
    const limit = bound?.get(resource);
    const underBound = limit === undefined ? undefined : max(limit.sub(share), ZERO).add(own);
    const base = {
      resource,
      need,
      share,
      ...(limit ? { bound: limit } : {}),
      pool: poolLeft,
      lendable,
      holders: holdersOf(record, resource, member),
    };
    if (underBound !== undefined && need.cmp(underBound) > 0) {
      shortfalls.push({ ...base, limitedBy: 'bound' });
      continue;
    }
    if (need.cmp(room) > 0) {
      shortfalls.push({ ...base, limitedBy: 'room' });
      continue;
    }
    let grant = min(max(need, at(request.want, resource)), room);
    if (underBound !== undefined) grant = min(grant, underBound);
    grants.set(resource, grant);
  }
  if (shortfalls.length > 0) return refuse(member, 'no-room', { shortfalls });

  const shares = new Map(record.shares);
  const fromPool = new Map<string, Quantity>();
  const fromLenders = new Map<string, Map<string, Quantity>>();
  let share = entry.share;
  let ownLendable = entry.lendable;
  const fromOwnOffer = new Map<string, Quantity>();
  for (const [resource, grant] of grants) {
    const withdrawn = min(grant, at(entry.lendable, resource));
    if (withdrawn.sign() > 0) fromOwnOffer.set(resource, withdrawn);
    ownLendable = withAmount(ownLendable, resource, at(entry.lendable, resource).sub(withdrawn));
    const beyond = grant.sub(withdrawn);
    share = withAmount(share, resource, at(share, resource).add(beyond));
    const fromThePool = min(beyond, max(pool.get(resource)!, ZERO));
    if (fromThePool.sign() > 0) fromPool.set(resource, fromThePool);
    let rest = beyond.sub(fromThePool);
    const lenders = [...shares]
      .filter(([other, e]) => other !== member && at(e.lendable, resource).sign() > 0)
      .sort(([a, ea], [b, eb]) => at(eb.lendable, resource).cmp(at(ea.lendable, resource)) || a.localeCompare(b));
    for (const [lender, e] of lenders) {
      if (rest.sign() <= 0) break;
      const take = min(rest, at(e.lendable, resource));
      shares.set(lender, {
        ...e,
        share: withAmount(e.share, resource, at(e.share, resource).sub(take)),
        lendable: withAmount(e.lendable, resource, at(e.lendable, resource).sub(take)),
      });
      const taken = fromLenders.get(lender) ?? new Map<string, Quantity>();
      taken.set(resource, take);
      fromLenders.set(lender, taken);
      rest = rest.sub(take);
    }
  }
  shares.set(member, { ...entry, share, lendable: ownLendable, lastRequest: request.id });
  return {
    ok: true,
    record: { ...record, shares },
    duplicate: false,
    granted: grants,
    fromOwnOffer,
    fromPool,
    fromLenders,
  };
}

/**
 * The member hands `amount` of its share back to the pool. It must have lowered what it enforces
 * first (the record cannot see that; the protocol, docs/adr/0039, says so). At most share − lendable.
 * A member removed from `members` may still give back (it may only lower).
 */
export function giveBack(record: ShareRecord, member: string, request: Request): Transition {
  return moveWithinShare(record, member, request, 'share', 'sub');
}

/**
 * The member offers `amount` of its share to other members: it keeps the share until someone takes
 * the offer, and must have lowered what it enforces to share − lendable first. At most share − lendable.
 */
export function offer(record: ShareRecord, member: string, request: Request): Transition {
  return moveWithinShare(record, member, request, 'lendable', 'add');
}

/**
 * What giveBack and offer share: at most share − lendable may move; `field` of the member's entry
 * changes by `amount` (`sub` lowers the share, `add` raises what it lends).
 */
function moveWithinShare(
  record: ShareRecord,
  member: string,
  request: Request,
  field: 'share' | 'lendable',
  op: 'add' | 'sub',
): Transition {
  const denied = precheck(record, member, request.amount, true);
  if (denied) return denied;
  const entry = memberShare(record, member);
  if (entry.lastRequest === request.id) return { ok: true, record, duplicate: true };
  const over = positive(request.amount)
    .filter(([r, v]) => v.cmp(at(entry.share, r).sub(at(entry.lendable, r))) > 0)
    .map(([r]) => r);
  if (over.length > 0) return refuse(member, 'more-than-held', { resources: over });
  let changed = entry[field];
  for (const [resource, v] of positive(request.amount))
    changed = withAmount(changed, resource, at(changed, resource)[op](v));
  return {
    ok: true,
    record: withEntry(record, member, { ...entry, [field]: changed, lastRequest: request.id }),
    duplicate: false,
  };
}

/**
 * The member takes back `amount` of what it offered and nobody took. Only once this write is stored
 * may it enforce that much more. At most what it still lends.
 */
export function withdrawOffer(record: ShareRecord, member: string, request: Request): Transition {
  const denied = precheck(record, member, request.amount, false);
  if (denied) return denied;
  const entry = memberShare(record, member);
  if (entry.lastRequest === request.id) return { ok: true, record, duplicate: true };
  const over = positive(request.amount)
    .filter(([r, v]) => v.cmp(at(entry.lendable, r)) > 0)
    .map(([r]) => r);
  if (over.length > 0) return refuse(member, 'more-than-held', { resources: over });
  let lendable = entry.lendable;
  for (const [resource, v] of positive(request.amount))
    lendable = withAmount(lendable, resource, at(lendable, resource).sub(v));
  return {
    ok: true,
    record: withEntry(record, member, { ...entry, lendable, lastRequest: request.id }),
    duplicate: false,
  };
}

/**
 * An operator releases a member that is gone (its cluster deleted, or its tenantgate stopped for
 * good): its share returns to the pool, the member leaves `members`, and its writes are refused from
 * now on. Releasing a member that still runs lets the fleet overspend by what it enforces.
 */
export function releaseMember(record: ShareRecord, member: string): Applied {
  if (record.released.has(member)) return { ok: true, record, duplicate: true };
  const shares = new Map(record.shares);
  shares.delete(member);
  const released = new Set(record.released);
  released.add(member);
  return {
    ok: true,
    record: { ...record, shares, members: record.members.filter((m) => m !== member), released },
    duplicate: false,
  };
}

/**
 * A new fleet budget (from git). Refused while a budgeted resource would be below what the members
 * hold: demarcation lets only a member lower its share, so the budget comes down after they give
 * back. A resource dropped from the budget drops from every share (it is no longer fleet-budgeted).
 */
export function setBudget(record: ShareRecord, budget: Resources): Transition {
  const shortfalls: Shortfall[] = [];
  for (const [resource, limit] of [...budget].sort(([a], [b]) => a.localeCompare(b))) {
    let held = ZERO;
    for (const entry of record.shares.values()) held = held.add(at(entry.share, resource));
    if (held.cmp(limit) > 0) {
      shortfalls.push({
        resource,
        need: held.sub(limit),
        share: ZERO,
        pool: limit.sub(held),
        lendable: ZERO,
        limitedBy: 'room',
        holders: holdersOf(record, resource),
      });
    }
  }
  if (shortfalls.length > 0) return refuse('', 'below-shares', { shortfalls });
  const shares = new Map<string, MemberShare>();
  const keep = (r: Resources): Resources => new Map([...r].filter(([resource]) => budget.has(resource)));
  for (const [cluster, entry] of record.shares)
    shares.set(cluster, { ...entry, share: keep(entry.share), lendable: keep(entry.lendable) });
  return { ok: true, record: { ...record, budget, shares }, duplicate: false };
}

/**
 * New members and bounds (from git). A member removed keeps its entry until it gives its share back
 * or an operator releases it; it may only lower. A released name may not come back under the same
 * name (its writes stay refused; register the cluster again under a new name).
 */
export function setMembers(
  record: ShareRecord,
  members: readonly string[],
  bounds: ReadonlyMap<string, Resources>,
): ShareRecord {
  return { ...record, members: members.filter((m) => !record.released.has(m)), bounds };
}
