/** Each tenantgate.yaml option is declared once, in CONFIG_SCHEMA: its default comes from there too. */
import { describe, expect, it } from 'vitest';
import { withSchemaDefaults } from '../../src/config/schema-types.js';
import { parseConfig } from '../../src/config/config.js';

const SCHEMA = {
  type: 'object',
  properties: {
    section: {
      type: 'object',
      default: {},
      properties: {
        list: { type: 'array', items: { type: 'string' }, default: ['a', 'b'] },
        inner: { type: 'object', default: {}, properties: { n: { type: 'integer', default: 3 } } },
        unset: { type: 'string' },
      },
    },
    optional: { type: 'object', properties: { n: { type: 'integer', default: 7 } } },
    map: {
      type: 'object',
      additionalProperties: { type: 'object', properties: { price: { type: 'string' }, per: { default: '1' } } },
    },
  },
} as const;

describe('withSchemaDefaults', () => {
  it('fills every default at every depth, and leaves an option without one unset', () => {
    expect(withSchemaDefaults({}, SCHEMA)).toEqual({ section: { list: ['a', 'b'], inner: { n: 3 } } });
  });

  it('keeps what is given: a list whole, a mapping key by key', () => {
    expect(withSchemaDefaults({ section: { list: ['x'], inner: { n: null } } }, SCHEMA)).toEqual({
      section: { list: ['x'], inner: { n: 3 } },
    });
  });

  it("fills a given mapping's defaults though the mapping has none of its own, and each value of a map", () => {
    expect(withSchemaDefaults({ optional: {}, map: { cpu: { price: '2' } } }, SCHEMA)).toEqual({
      section: { list: ['a', 'b'], inner: { n: 3 } },
      optional: { n: 7 },
      map: { cpu: { price: '2', per: '1' } },
    });
  });

  it('gives each configuration its own copy of a default', () => {
    const first = withSchemaDefaults({}, SCHEMA) as { section: { list: string[] } };
    first.section.list.push('c');
    expect(withSchemaDefaults({}, SCHEMA)).toEqual({ section: { list: ['a', 'b'], inner: { n: 3 } } });
  });
});

describe("tenantgate.yaml's defaults come from its schema", () => {
  it('a price sheet gets its hours per month and each price its per', () => {
    const c = parseConfig('pricing: {currency: EUR, perHour: {requests.cpu: {price: "0.03"}}}\n');
    expect(c.pricing).toEqual({
      currency: 'EUR',
      hoursPerMonth: 730,
      perHour: { 'requests.cpu': { price: '0.03', per: '1' } },
    });
  });

  it('a partly given section keeps the defaults of the keys it leaves out', () => {
    const c = parseConfig('deletion: {breaker: {maxProjects: 5}}\n');
    expect(c.deletion).toEqual({ policy: 'Delete', breaker: { windowSeconds: 600, maxProjects: 5, maxShare: 0.1 } });
  });
});
