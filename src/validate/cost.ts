/**
 * What a project's allocation costs per month, from tenantgate.yaml's price sheet (docs/budgets.md#cost).
 * Exact: every amount is a rational of two BigInts built from the quantities' exact decimal values and
 * the prices as written; nothing is a float. Money is shown rounded up to the cent (never less than it
 * costs), so a refusal's numbers always show the cost above the budget (a budget has at most 2 decimals).
 * Pure; C1 itself is in rules/cost.ts.
 */
import type { PricingConfig } from '../config/config.js';
import { Quantity } from '../quantity/quantity.js';
import type { Project, Resources } from './types.js';
import { countedName } from './counted-name.js';

/** n / d with d > 0, in lowest terms. */
export interface Rational {
  readonly n: bigint;
  readonly d: bigint;
}

export const ZERO: Rational = { n: 0n, d: 1n };

const abs = (v: bigint): bigint => (v < 0n ? -v : v);

function gcd(a: bigint, b: bigint): bigint {
  a = abs(a);
  b = abs(b);
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

function reduced(n: bigint, d: bigint): Rational {
  if (d === 0n) throw new RangeError('division by zero');
  if (d < 0n) [n, d] = [-n, -d];
  const g = gcd(n, d);
  return g > 1n ? { n: n / g, d: d / g } : { n, d };
}

const DECIMAL = /^(-)?([0-9]+)(?:\.([0-9]+))?$/;

/** A plain decimal ("1.5", "-0.001", "1073741824"; no exponent) exactly, or undefined. */
function tryDecimal(text: string): Rational | undefined {
  const m = DECIMAL.exec(text);
  if (!m) return undefined;
  const fraction = m[3] ?? '';
  const n = BigInt(m[2]! + fraction);
  return reduced(m[1] ? -n : n, 10n ** BigInt(fraction.length));
}

export function decimal(text: string): Rational {
  const r = tryDecimal(text);
  if (!r) throw new RangeError(`${JSON.stringify(text)} is not a plain decimal`);
  return r;
}

/** A quantity's exact value (`1Gi` → 1073741824, `500m` → 1/2). */
export function ofQuantity(q: Quantity): Rational {
  return decimal(q.toDecimalString());
}

export const add = (a: Rational, b: Rational): Rational =>
  a.d === b.d ? reduced(a.n + b.n, a.d) : reduced(a.n * b.d + b.n * a.d, a.d * b.d);
export const sub = (a: Rational, b: Rational): Rational => add(a, { n: -b.n, d: b.d });
const mul = (a: Rational, b: Rational): Rational => reduced(a.n * b.n, a.d * b.d);
const div = (a: Rational, b: Rational): Rational => reduced(a.n * b.d, a.d * b.n);
/** Exact comparison: −1, 0 or 1. */
export function cmp(a: Rational, b: Rational): -1 | 0 | 1 {
  const x = a.n * b.d;
  const y = b.n * a.d;
  return x === y ? 0 : x > y ? 1 : -1;
}
export const sum = (terms: Iterable<Rational>): Rational => {
  let total = ZERO;
  for (const t of terms) total = add(total, t);
  return total;
};

/** The price sheet parsed: per priced resource (under countedName), what one unit of it costs per month. */
export interface PriceSheet {
  readonly currency: string;
  readonly hoursPerMonth: Rational;
  readonly monthlyPerUnit: ReadonlyMap<string, Rational>;
}

const sheets = new WeakMap<PricingConfig, PriceSheet>();

/**
 * tenantgate.yaml's `pricing` (validated by the config schema: prices are plain decimals, `per` a
 * quantity above 0) as per-unit monthly rates: price ÷ per × hoursPerMonth. Parsed once per configuration.
 */
export function priceSheet(pricing: PricingConfig): PriceSheet {
  let sheet = sheets.get(pricing);
  if (sheet) return sheet;
  const hoursPerMonth = decimal(numberText(pricing.hoursPerMonth));
  const monthlyPerUnit = new Map<string, Rational>();
  for (const [resource, { price, per }] of Object.entries(pricing.perHour)) {
    // Under the `requests.` spelling (countedName): the configuration refuses a sheet naming both.
    monthlyPerUnit.set(countedName(resource), mul(div(decimal(price), ofQuantity(Quantity.parse(per))), hoursPerMonth));
  }
  sheets.set(pricing, (sheet = { currency: pricing.currency, hoursPerMonth, monthlyPerUnit }));
  return sheet;
}

/** A YAML number as the decimal it was written as (730, 730.5): its shortest form, without an exponent. */
function numberText(n: number): string {
  const text = String(n);
  if (!/e/i.test(text)) return text;
  // Only numbers below 1e-6 or from 1e21 print with an exponent; the schema bounds hoursPerMonth to (0, 744].
  return n.toFixed(20).replace(/\.?0+$/, '');
}

/** Whether a resource key is priced at all: tier keys (`<resource>@<priorityClass>`) count the same pods again. */
export function isUnscopedKey(resource: string): boolean {
  return !resource.includes('@');
}

/**
 * What one namespace's list lets its pods take of each priced quantity, under countedName (unscoped
 * keys only): a list naming both spellings (`cpu` and `requests.cpu`) counts the smaller, once, since
 * Kubernetes holds the namespace to both limits.
 */
function countedAmounts(resources: Resources): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  for (const [resource, q] of resources) {
    if (!isUnscopedKey(resource)) continue;
    const name = countedName(resource);
    const prev = out.get(name);
    if (!prev || q.cmp(prev) < 0) out.set(name, q);
  }
  return out;
}

/**
 * Whether `resources` names two spellings of one quantity: a sum of such lists cannot be priced as one list
 * (sharesCost).
 */
export function namesBothSpellings(resources: Resources): boolean {
  for (const resource of resources.keys()) {
    const name = countedName(resource);
    if (name !== resource && resources.has(name)) return true;
  }
  return false;
}

/**
 * Per priced resource (under countedName) of one namespace's list, what it costs per month. A sum of
 * several namespaces' lists prices the same only when it does not name both spellings of a quantity
 * (namesBothSpellings); otherwise price them one by one (sharesCostByResource).
 */
export function costByResource(sheet: PriceSheet, resources: Resources): Map<string, Rational> {
  const out = new Map<string, Rational>();
  for (const [resource, q] of countedAmounts(resources)) {
    const rate = sheet.monthlyPerUnit.get(resource);
    if (rate) out.set(resource, mul(ofQuantity(q), rate));
  }
  return out;
}

/** What one namespace's list costs per month: Σ over its priced quantities of amount × price ÷ per × hoursPerMonth. */
export function monthlyCost(sheet: PriceSheet, resources: Resources): Rational {
  return sum(costByResource(sheet, resources).values());
}

/**
 * Per priced resource, what several namespaces' lists cost together: each list priced on its own
 * (costByResource), then added.
 */
function sharesCostByResource(sheet: PriceSheet, shares: Iterable<Resources>): Map<string, Rational> {
  const out = new Map<string, Rational>();
  for (const share of shares)
    for (const [resource, cost] of costByResource(sheet, share))
      out.set(resource, add(out.get(resource) ?? ZERO, cost));
  return out;
}

/** What several namespaces' lists (a project's shares) cost per month together. */
export function sharesCost(sheet: PriceSheet, shares: Iterable<Resources>): Rational {
  return sum(sharesCostByResource(sheet, shares).values());
}

/**
 * The project's `spec.costBudget.monthly`, exactly; undefined without a costBudget or when it is not a plain decimal.
 */
export function monthlyBudgetOf(project: Project): Rational | undefined {
  const monthly = project.spec.costBudget?.monthly;
  return typeof monthly === 'string' ? tryDecimal(monthly) : undefined;
}

/** The amount in cents, rounded up (toward +∞): what is shown never understates a cost. */
export function ceilCents(amount: Rational): bigint {
  const n = amount.n * 100n;
  const q = n / amount.d;
  return n % amount.d > 0n ? q + 1n : q;
}

const SYMBOLS: Readonly<Record<string, string>> = { USD: '$', EUR: '€', GBP: '£' };

/** Cents as "1,580.00" (no currency; "-230.00" below zero). */
export function centsText(cents: bigint): string {
  const sign = cents < 0n ? '-' : '';
  const digits = abs(cents).toString().padStart(3, '0');
  const whole = digits.slice(0, -2).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}${whole}.${digits.slice(-2)}`;
}

/** Cents with the currency: "$1,580.00", "-$230.00", "€12.50", "CHF 1,580.00". */
function formatCents(cents: bigint, currency: string): string {
  const text = centsText(cents);
  const negative = text.startsWith('-');
  const body = negative ? text.slice(1) : text;
  const symbol = SYMBOLS[currency];
  return `${negative ? '-' : ''}${symbol ?? `${currency} `}${body}`;
}

/** An amount rounded up to the cent with the currency: "$1,580.00". */
export function formatMoney(amount: Rational, currency: string): string {
  return formatCents(ceilCents(amount), currency);
}

/** The amount for JSON: a plain decimal with 2 places, rounded up to the cent ("1580.00"). */
export function moneyJson(amount: Rational): string {
  return centsText(ceilCents(amount)).replaceAll(',', '');
}

/**
 * A change between two shown amounts, from their shown cents so that the three numbers add up:
 * "+$230.00", "-$12.50", "+$0.00".
 */
export function formatDelta(before: Rational, after: Rational, currency: string): string {
  const delta = ceilCents(after) - ceilCents(before);
  return delta < 0n ? formatCents(delta, currency) : `+${formatCents(delta, currency)}`;
}

/** A project's cost on one cluster as people read it (the budget view, the plugin, plan). */
export interface ProjectCostJson {
  currency: string;
  /** What the allocation costs per month, rounded up to the cent ("1350.00"). */
  monthly: string;
  /** spec.costBudget.monthly, when the project has one. */
  budget?: string;
  /** budget − monthly (negative when over), from the shown cents. */
  headroom?: string;
  /** Per priced resource of the allocation, its monthly cost. */
  resources: Record<string, string>;
}

/** The cost of an allocation (a project's shares on a cluster, one list per namespace) as JSON. */
export function projectCostJson(sheet: PriceSheet, project: Project, shares: Iterable<Resources>): ProjectCostJson {
  const byResource = sharesCostByResource(sheet, shares);
  const monthly = sum(byResource.values());
  const budget = monthlyBudgetOf(project);
  const resources: Record<string, string> = {};
  for (const r of [...byResource.keys()].sort()) resources[r] = moneyJson(byResource.get(r)!);
  return {
    currency: sheet.currency,
    monthly: moneyJson(monthly),
    ...(budget
      ? { budget: moneyJson(budget), headroom: centsText(ceilCents(budget) - ceilCents(monthly)).replaceAll(',', '') }
      : {}),
    resources,
  };
}
