import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FLEET_CRD_PATH, fleetBudgetCrd, renderFleetCrdYaml } from '../../src/fleet/fleet-budget-crd.js';

describe('FleetBudget CRD', () => {
  it('the committed CRD is the generated one, byte for byte', () => {
    const committed = readFileSync(new URL(`../../${FLEET_CRD_PATH}`, import.meta.url), 'utf8');
    expect(
      committed === renderFleetCrdYaml(),
      `${FLEET_CRD_PATH} differs from src/fleet/fleet-budget-crd.ts: run \`make crd\` and commit the result`,
    ).toBe(true);
  });

  it('is namespaced v1alpha1, served and stored, with a status subresource and quantities as int-or-string', () => {
    const crd = parse(renderFleetCrdYaml());
    expect(crd.metadata.name).toBe('fleetbudgets.tenantgate.io');
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.names).toMatchObject({ kind: 'FleetBudget', plural: 'fleetbudgets' });
    const [version] = crd.spec.versions;
    expect(version).toMatchObject({ name: 'v1alpha1', served: true, storage: true, subresources: { status: {} } });
    const root = version.schema.openAPIV3Schema;
    expect(root.properties.spec.properties.budget.additionalProperties['x-kubernetes-int-or-string']).toBe(true);
    expect(root.properties.spec.properties.members.items.type).toBe('string');
    expect(
      root.properties.spec.properties.bounds.additionalProperties.additionalProperties['x-kubernetes-int-or-string'],
    ).toBe(true);
    const member = root.properties.status.properties.members.additionalProperties;
    expect(Object.keys(member.properties).sort()).toEqual(['lastRequest', 'lendable', 'share']);
    const released = root.properties.status.properties.released.additionalProperties;
    expect(released.properties.at).toMatchObject({ type: 'string', format: 'date-time' });
    expect(released.required).toEqual(['at', 'by']);
  });

  it('is structural: a type everywhere, additionalProperties never beside properties, every map and list bounded', () => {
    const problems: string[] = [];
    const walk = (s: Record<string, any>, at: string): void => {
      if (s.type === undefined && s['x-kubernetes-int-or-string'] !== true) problems.push(`${at}: no type`);
      if (s.properties && s.additionalProperties !== undefined)
        problems.push(`${at}: properties and additionalProperties`);
      if (s.additionalProperties && s.maxProperties === undefined) problems.push(`${at}: unbounded map`);
      if (s.type === 'array' && s.maxItems === undefined) problems.push(`${at}: unbounded list`);
      for (const [k, v] of Object.entries(s.properties ?? {})) walk(v as Record<string, any>, `${at}.${k}`);
      if (s.additionalProperties) walk(s.additionalProperties, `${at}[*]`);
      if (s.items) walk(s.items, `${at}[]`);
    };
    const crd = fleetBudgetCrd() as any;
    walk(crd.spec.versions[0].schema.openAPIV3Schema, 'root');
    expect(problems).toEqual([]);
  });
});
