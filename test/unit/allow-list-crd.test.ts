/**
 * The AllowList CRD (src/validate/schema/allow-list-crd.ts): the committed copy is the generated one, the
 * kind is namespaced v1alpha1 without status, and its schema is structural and bounded everywhere (the
 * allow-list policies walk it in CEL; docs/adr/0095-allow-lists-in-the-api-server.md).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ALLOW_LIST_CRD_PATH, allowListCrd, renderAllowListCrdYaml } from '../../src/validate/schema/allow-list-crd.js';

type Schema = Record<string, any>;
const root = (): Schema => (allowListCrd() as Schema).spec.versions[0].schema.openAPIV3Schema;
const sortedKeys = (o: Schema) => Object.keys(o).sort();

describe('AllowList CRD', () => {
  it('the committed CRD is the generated one, byte for byte', () => {
    const committed = readFileSync(new URL(`../../${ALLOW_LIST_CRD_PATH}`, import.meta.url), 'utf8');
    const hint = `${ALLOW_LIST_CRD_PATH} differs from its generator: run \`make crd\` and commit the result`;
    expect(committed === renderAllowListCrdYaml(), hint).toBe(true);
  });

  it('is namespaced v1alpha1, served and stored, without a status subresource, showing project and tenant', () => {
    const crd = parse(renderAllowListCrdYaml());
    expect(crd.metadata.name).toBe('allowlists.tenantgate.io');
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.names).toMatchObject({ kind: 'AllowList', plural: 'allowlists', singular: 'allowlist' });
    const [version, ...others] = crd.spec.versions;
    expect(others).toEqual([]);
    expect(version).toMatchObject({ name: 'v1alpha1', served: true, storage: true });
    expect(version.subresources).toBeUndefined();
    expect(version.schema.openAPIV3Schema.properties.status).toBeUndefined();
    const columns = version.additionalPrinterColumns.map((c: Schema) => `${c.name} ${c.jsonPath}`);
    expect(columns).toEqual(['Project .spec.project', 'Tenant .spec.tenant', 'Age .metadata.creationTimestamp']);
  });

  it("has the ADR's spec fields, every one required", () => {
    const spec = root().properties.spec;
    const fields = [
      'project',
      'tenant',
      'priorityClasses',
      'systemPriorityClasses',
      'services',
      'hostnames',
      'ingressClasses',
      'gatewayClasses',
      'storageClasses',
      'runtimeClasses',
      'deviceClasses',
      'nodeSelector',
      'tolerations',
      'registries',
      'persistentVolumes',
    ].sort();
    expect(sortedKeys(spec.properties)).toEqual(fields);
    expect([...spec.required].sort()).toEqual(fields);
    const services = spec.properties.services.properties;
    expect(sortedKeys(services)).toEqual(['externalIPs', 'loadBalancerSourceRanges', 'types']);
    expect(sortedKeys(services.loadBalancerSourceRanges.properties)).toEqual(['any', 'cidrs']);
    expect(sortedKeys(spec.properties.registries.properties)).toEqual(['any', 'prefixes']);
    expect(sortedKeys(spec.properties.tolerations.items.properties)).toEqual(['effect', 'key', 'operator', 'value']);
  });

  it('is structural and bounded: types, maxItems, maxProperties, maxLength or enum, all fields required', () => {
    const problems: string[] = [];
    const walk = (s: Schema, at: string): void => {
      const problem = (what: string) => problems.push(`${at}: ${what}`);
      if (s.type === undefined) problem('no type');
      if (s.properties && s.additionalProperties !== undefined) problem('properties and additionalProperties');
      if (s.additionalProperties && s.maxProperties === undefined) problem('unbounded map');
      if (s.type === 'array' && s.maxItems === undefined) problem('unbounded list');
      if (s.type === 'string' && s.maxLength === undefined && s.enum === undefined) problem('unbounded string');
      if (s.properties && JSON.stringify([...(s.required ?? [])].sort()) !== JSON.stringify(sortedKeys(s.properties))) {
        problem('not every field required');
      }
      for (const [k, v] of Object.entries(s.properties ?? {})) walk(v as Schema, `${at}.${k}`);
      if (s.additionalProperties) walk(s.additionalProperties, `${at}[*]`);
      if (s.items) walk(s.items, `${at}[]`);
    };
    // apiVersion, kind and metadata are Kubernetes' own (the API server bounds them); spec is ours.
    walk(root().properties.spec, 'spec');
    expect(problems).toEqual([]);
  });
});
