/**
 * The rules of the policies on claims (docs/adr/0095-allow-lists-in-the-api-server.md):
 * tenantgate-allow-persistentvolumeclaims (X5 storage class, X10 the selector's project pin; a claim's
 * volumeName is the webhook's) and tenantgate-allow-resourceclaims / -resourceclaimtemplates (X7 device
 * classes, X8 device tolerations without the node.kubernetes.io/ exception), on resource.k8s.io v1:
 * v1beta1 and v1beta2 claims reach the policy converted (matchPolicy Equivalent).
 */
import { LABEL_PROJECT } from '../types.js';
import {
  combine,
  declare,
  fieldOr,
  listed,
  listRule,
  nameAllowed,
  newAndOld,
  oldName,
  quoted,
  validation,
  valueRule,
} from './cel.js';
import type { RuleParts, Variable } from './cel.js';
import { ALLOWED_TOLERATIONS, describeToleration, fullToleration, tolerationAllowed } from './tolerations.js';

/** X5: a claim's storage class, when set, any or listed. */
const storageClass: RuleParts = combine(
  declare(...newAndOld('storageClass', (o) => fieldOr(`${o}.spec`, 'storageClassName', "''"), "''")),
  valueRule('storageClass', (v) => `(${v} == '' || ${nameAllowed('storageClasses', v)})`, {
    rule: 'X5',
    what: `'storageClassName ' + ${quoted('variables.storageClass')}`,
    allowed: listed('params.spec.storageClasses.names', 'no StorageClass'),
    summary: 'the storageClassName is not allowed for this project',
  }),
);

const SELECTOR = 'object.spec.selector';
const pinnedByLabels =
  `has(${SELECTOR}.matchLabels) && '${LABEL_PROJECT}' in ${SELECTOR}.matchLabels && ` +
  `${SELECTOR}.matchLabels['${LABEL_PROJECT}'] == params.spec.project`;
const pinnedByExpression =
  `has(${SELECTOR}.matchExpressions) && ${SELECTOR}.matchExpressions.exists(e, e.key == '${LABEL_PROJECT}' && ` +
  "e.operator == 'In' && has(e.values) && e.values.size() > 0 && e.values.all(v, v == params.spec.project))";

/** X10: a selector may bind only volumes labelled for the project; one kept from the old claim is not judged. */
const selector: RuleParts = {
  variables: [
    {
      name: 'selectorKept',
      expression:
        `oldObject != null && has(${SELECTOR}) && has(oldObject.spec.selector) && ` +
        `${SELECTOR} == oldObject.spec.selector`,
    },
    { name: 'selectorPinned', expression: `(${pinnedByLabels}) || (${pinnedByExpression})` },
  ],
  validations: [
    validation(`!has(${SELECTOR}) || variables.selectorKept || variables.selectorPinned`, {
      rule: 'X10',
      what:
        `'a selector without ${LABEL_PROJECT}=' + params.spec.project + ` +
        `" (it may bind another project's PersistentVolume)"`,
      allowed: `'a selector with matchLabels ${LABEL_PROJECT}: ' + params.spec.project`,
      summary: `the selector must pin ${LABEL_PROJECT} to this project`,
    }),
  ],
};

export const CLAIM_RULES: RuleParts = combine(storageClass, selector);

/** The variable `name` and old<Name> computed by `of` from the requests of the object and of the old object. */
const fromRequests = (name: string, of: (requests: string) => string): Variable[] => [
  { name, expression: of('variables.requests') },
  { name: oldName(name), expression: of('variables.oldRequests') },
];

/** The tolerations of a list of requests (`exactly` or subrequests), every field given. */
const tolerationsOf = (requests: string) =>
  `${requests}.filter(r, has(r.tolerations)).map(r, r.tolerations.map(t, ${fullToleration('t')})).flatten()`;

/**
 * X7 and X8 on the device requests of the claim spec at `spec` (a ResourceClaim's `spec`, a
 * template's `spec.spec`).
 */
function deviceRules(spec: string): RuleParts {
  const requestsOf = (o: string) =>
    `(has(${o}.${spec}.devices) && has(${o}.${spec}.devices.requests) ? ${o}.${spec}.devices.requests : [])`;
  const classesOf = (exact: string, sub: string) =>
    `${exact}.map(q, q.deviceClassName) + ${sub}.map(q, q.deviceClassName)`;
  return combine(
    declare(
      ...newAndOld('requests', requestsOf, '[]'),
      // The requests' `exactly`, and their `firstAvailable` subrequests: both name a class and tolerations.
      ...fromRequests('exactRequests', (r) => `${r}.filter(q, has(q.exactly)).map(q, q.exactly)`),
      ...fromRequests('subRequests', (r) => `${r}.filter(q, has(q.firstAvailable)).map(q, q.firstAvailable).flatten()`),
      { name: 'deviceClasses', expression: classesOf('variables.exactRequests', 'variables.subRequests') },
      { name: 'oldDeviceClasses', expression: classesOf('variables.oldExactRequests', 'variables.oldSubRequests') },
      {
        name: 'deviceTolerations',
        expression: `${tolerationsOf('variables.exactRequests')} + ${tolerationsOf('variables.subRequests')}`,
      },
      {
        name: 'oldDeviceTolerations',
        expression: `${tolerationsOf('variables.oldExactRequests')} + ${tolerationsOf('variables.oldSubRequests')}`,
      },
    ),
    listRule('deviceClasses', (c) => nameAllowed('deviceClasses', c), {
      rule: 'X7',
      what: (c) => `'deviceClassName ' + ${quoted(c)}`,
      allowed: listed('params.spec.deviceClasses.names', 'no DeviceClass'),
      summary: 'a deviceClassName is not allowed for this project',
    }),
    listRule('deviceTolerations', tolerationAllowed, {
      rule: 'X8',
      what: (t) => `'device toleration ' + ${describeToleration(t)}`,
      allowed: ALLOWED_TOLERATIONS,
      summary: 'a device toleration is not allowed for this project',
    }),
  );
}

export const RESOURCE_CLAIM_RULES: RuleParts = deviceRules('spec');
export const RESOURCE_CLAIM_TEMPLATE_RULES: RuleParts = deviceRules('spec.spec');
