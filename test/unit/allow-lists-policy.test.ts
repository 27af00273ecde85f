/**
 * The allow-list ValidatingAdmissionPolicies (src/validate/policies/allow-lists-policy.ts, ADR 0095) as
 * generated: the committed copy is the generated one, every message carries its rule id, no subject is
 * exempt, every policy fails closed on its namespace's AllowList. test/e2e/allow-lists-policy.test.ts
 * runs them in the real API server.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  ALLOW_LIST_POLICIES,
  ALLOW_LISTS_POLICY_PATH,
  RELEASE_NAMESPACE_PLACEHOLDER,
  allowListPolicyObjects,
  renderAllowListPoliciesYaml,
} from '../../src/validate/policies/allow-lists-policy.js';

interface Policy {
  kind: string;
  metadata: { name: string };
  spec: {
    failurePolicy: string;
    paramKind: unknown;
    matchConstraints: {
      matchPolicy: string;
      namespaceSelector: { matchExpressions: unknown[] };
      resourceRules: Array<{ operations: string[] }>;
    };
    matchConditions?: unknown[];
    variables: Array<{ name: string; expression: string }>;
    validations: Array<{ expression: string; messageExpression: string; message: string }>;
  };
}
interface Binding {
  kind: string;
  metadata: { name: string };
  spec: { policyName: string; paramRef: unknown; validationActions: string[] };
}

const docs = allowListPolicyObjects();
const policies = docs.filter((d) => d.kind === 'ValidatingAdmissionPolicy') as unknown as Policy[];
const bindings = docs.filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding') as unknown as Binding[];
/** The rules the API server judges (X10's volumeName and H3 stay offline or in the webhook). */
const RULES = ['X1', 'X2', 'X3', 'X4', 'X5', 'X6', 'X7', 'X8', 'X9', 'X10', 'H1', 'H2', 'H4'];
const NOT_ALLOWED = "' is not allowed for project ' + params.spec.project + '; allowed: ' + ";
const TEMPLATE = 'charts/tenantgate/templates/policies/allow-lists.yaml';

/** Every CEL text of a policy: its variables', validations' and messages' expressions. */
const expressions = (p: Policy): string[] => [
  ...p.spec.variables.map((v) => v.expression),
  ...p.spec.validations.flatMap((v) => [v.expression, v.messageExpression]),
];
const variablesRead = (text: string): string[] => [...text.matchAll(/variables\.(\w+)/g)].map((m) => m[1]!);

describe('the allow-list policies tenantgate-allow-*', () => {
  it('the committed file is the generated one, byte for byte', () => {
    const committed = readFileSync(new URL(`../../${ALLOW_LISTS_POLICY_PATH}`, import.meta.url), 'utf8');
    const hint = `${ALLOW_LISTS_POLICY_PATH} differs from src/validate/policies: run \`make crd\`, commit the result`;
    expect(committed === renderAllowListPoliciesYaml(), hint).toBe(true);
    expect(parseAllDocuments(committed).map((d) => d.toJS())).toEqual(docs);
  });

  it('every policy has its binding, to the AllowList tenantgate-allow of the namespace, refusing without it', () => {
    expect(bindings.map((b) => b.metadata.name)).toEqual(policies.map((p) => p.metadata.name));
    for (const b of bindings) {
      expect(b.spec).toEqual({
        policyName: b.metadata.name,
        paramRef: { name: 'tenantgate-allow', parameterNotFoundAction: 'Deny' },
        validationActions: ['Deny'],
      });
    }
  });

  it('every policy fails closed, judges CREATE and UPDATE in project namespaces, not in system ones', () => {
    for (const p of policies) {
      expect(p.metadata.name).toMatch(/^tenantgate-allow-/);
      expect(p.spec.failurePolicy).toBe('Fail');
      expect(p.spec.paramKind).toEqual({ apiVersion: 'tenantgate.io/v1alpha1', kind: 'AllowList' });
      expect(p.spec.matchConstraints.matchPolicy).toBe('Equivalent');
      expect(p.spec.matchConstraints.namespaceSelector.matchExpressions).toEqual([
        { key: 'tenantgate.io/project', operator: 'Exists' },
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', RELEASE_NAMESPACE_PLACEHOLDER],
        },
      ]);
      for (const r of p.spec.matchConstraints.resourceRules) expect(r.operations).toEqual(['CREATE', 'UPDATE']);
    }
  });

  it('exempts no subject: no match condition, no expression reads who asks', () => {
    for (const p of policies) {
      expect(p.spec.matchConditions, p.metadata.name).toBeUndefined();
      for (const text of expressions(p)) expect(text, p.metadata.name).not.toMatch(/userInfo|authorizer/);
    }
  });

  it("every message starts with a rule id the ADR gives, in the ADR's format", () => {
    const judged = new Set<string>();
    for (const p of policies) {
      for (const v of p.spec.validations) {
        // Each refusal's text starts with the rule id and the subject (a guarded message has one per check).
        const ids = [...v.messageExpression.matchAll(/'\[([A-Z]\d+)\] ' \+ variables\.subject \+ ': ' \+ /g)].map(
          (m) => m[1],
        );
        const id = ids[0];
        expect(id, v.messageExpression).toBeDefined();
        expect(new Set(ids).size, v.messageExpression).toBe(1);
        expect(RULES).toContain(id);
        expect(v.message.startsWith(`[${id}] `), v.message).toBe(true);
        expect(v.messageExpression).toContain(NOT_ALLOWED);
        judged.add(id!);
      }
    }
    expect([...judged].sort()).toEqual([...RULES].sort());
  });

  it("the pods policy's messages build no text on an admitted pod: each tests its checks first", () => {
    // The API server evaluates every message expression on every request it judges, admitted or not.
    const pods = policies.find((p) => p.metadata.name === 'tenantgate-allow-pods');
    expect(pods).toBeDefined();
    for (const v of pods!.spec.validations) {
      const firstTest = v.messageExpression.indexOf(' ? ');
      expect(firstTest, v.messageExpression).toBeGreaterThan(0);
      expect(v.messageExpression.slice(0, firstTest), v.messageExpression).not.toContain("'[");
      expect(v.messageExpression.endsWith("''"), v.messageExpression).toBe(false);
    }
  });

  it('reads only variables it declares, each declared once and before it is read', () => {
    for (const p of policies) {
      const declared = new Set<string>();
      for (const v of p.spec.variables) {
        expect(declared.has(v.name), `${p.metadata.name}: variable ${v.name} declared twice`).toBe(false);
        for (const name of variablesRead(v.expression)) {
          expect(declared, `${p.metadata.name}: ${v.name} reads ${name}`).toContain(name);
        }
        declared.add(v.name);
      }
      for (const v of p.spec.validations) {
        for (const name of variablesRead(`${v.expression} ${v.messageExpression}`)) {
          expect(declared, `${p.metadata.name} reads ${name}`).toContain(name);
        }
      }
    }
  });

  it('keeps every expression balanced (parentheses, brackets, quotes)', () => {
    const balanced = (text: string) => {
      const stack: string[] = [];
      let quote: string | undefined;
      for (let i = 0; i < text.length; i++) {
        const ch = text[i]!;
        if (quote) {
          if (ch === '\\') i++;
          else if (ch === quote) quote = undefined;
          continue;
        }
        if (ch === "'" || ch === '"') quote = ch;
        else if ('([{'.includes(ch)) stack.push(')]}'['([{'.indexOf(ch)]!);
        else if (')]}'.includes(ch) && stack.pop() !== ch) return false;
      }
      return stack.length === 0 && quote === undefined;
    };
    for (const p of policies) {
      for (const text of expressions(p)) expect(balanced(text), `${p.metadata.name}: ${text}`).toBe(true);
    }
  });

  it('judges the kinds of the ADR, each kind in one policy', () => {
    const resources = ALLOW_LIST_POLICIES.flatMap((p) =>
      p.resourceRules.flatMap((r) => r.resources.map((res) => `${r.apiGroups[0]}/${res}`)),
    );
    const gatewayApi = (...names: string[]) => names.map((n) => `gateway.networking.k8s.io/${n}`);
    expect(new Set(resources).size).toBe(resources.length);
    expect(resources.sort()).toEqual(
      [
        '/pods',
        '/pods/ephemeralcontainers',
        '/services',
        '/persistentvolumeclaims',
        'resource.k8s.io/resourceclaims',
        'resource.k8s.io/resourceclaimtemplates',
        'networking.k8s.io/ingresses',
        ...gatewayApi('gateways', 'listenersets', 'httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes', 'udproutes'),
        'gateway.networking.x-k8s.io/xlistenersets',
      ].sort(),
    );
  });

  it('the chart puts the release namespace in place of the placeholder', () => {
    const template = readFileSync(new URL(`../../${TEMPLATE}`, import.meta.url), 'utf8');
    const include = '{{ .Files.Get "files/policies/allow-lists.yaml"';
    expect(template).toContain(`${include} | replace "${RELEASE_NAMESPACE_PLACEHOLDER}" .Release.Namespace }}`);
    const generated = renderAllowListPoliciesYaml();
    expect(generated.split(RELEASE_NAMESPACE_PLACEHOLDER).length - 1).toBe(policies.length);
  });
});
