/**
 * The rules of the policy tenantgate-allow-pods (Pods and pods/ephemeralcontainers): X1 priority class,
 * X6 runtime class, X8 node placement (node selector, nodeName, tolerations), X9 images
 * (docs/adr/0095-allow-lists-in-the-api-server.md, "What each rule judges"). In the offline form's
 * order (checkPodSpec), so the first refusal names the same rule.
 */
import {
  combine,
  declare,
  fieldOr,
  listed,
  listRule,
  nameAllowed,
  newAndOld,
  quoted,
  valueRule,
  type RuleParts,
} from './cel.js';
import {
  ALLOWED_TOLERATIONS,
  describeToleration,
  fullToleration,
  NODE_CONDITION_PREFIX,
  tolerationAllowed,
} from './tolerations.js';

const SYSTEM_PREFIX = 'system-';

/** A string field of the pod's spec, '' when unset, as `name` and old<Name>. */
const specString = (name: string, field: string) =>
  declare(...newAndOld(name, (o) => fieldOr(`${o}.spec`, field, "''"), "''"));

const SYSTEM_CLASSES = 'params.spec.systemPriorityClasses';
const CLASS_NAMES = 'params.spec.priorityClasses.names';
const ALLOWED_PRIORITY_CLASSES =
  `(params.spec.priorityClasses.any ? 'any PriorityClass but ${SYSTEM_PREFIX}*' + ` +
  `(${SYSTEM_CLASSES}.size() > 0 ? ' (and ' + ${SYSTEM_CLASSES}.join(', ') + ')' : '') : ` +
  `${listed(`(${CLASS_NAMES} + ${SYSTEM_CLASSES}.filter(c, !(c in ${CLASS_NAMES})))`, 'no PriorityClass')})`;

/** X1: a system-* class only when the Project names it, another when any or listed. */
const priorityClass: RuleParts = combine(
  specString('priorityClass', 'priorityClassName'),
  valueRule(
    'priorityClass',
    (v) =>
      `(${v} == '' || (${v}.startsWith('${SYSTEM_PREFIX}') ? ${v} in ${SYSTEM_CLASSES} : ` +
      `${nameAllowed('priorityClasses', v)}))`,
    {
      rule: 'X1',
      what: `'priorityClassName ' + ${quoted('variables.priorityClass')}`,
      allowed: ALLOWED_PRIORITY_CLASSES,
      summary: 'the priorityClassName is not allowed for this project',
    },
  ),
);

/** X6: a runtime class, when set, any or listed. */
const runtimeClass: RuleParts = combine(
  specString('runtimeClass', 'runtimeClassName'),
  valueRule('runtimeClass', (v) => `(${v} == '' || ${nameAllowed('runtimeClasses', v)})`, {
    rule: 'X6',
    what: `'runtimeClassName ' + ${quoted('variables.runtimeClass')}`,
    allowed: listed('params.spec.runtimeClasses.names', 'no RuntimeClass'),
    summary: 'the runtimeClassName is not allowed for this project',
  }),
);

const REQUIRED = 'params.spec.nodeSelector';
const MISSING_KEY = 'variables.missingNodeSelector[0]';

/** X8: every label of the AllowList's node selector selected with its value. */
const nodeSelector: RuleParts = combine(
  declare(
    ...newAndOld('nodeSelector', (o) => fieldOr(`${o}.spec`, 'nodeSelector', '{}'), '{}'),
    // The required labels the pod does not select with their value, sorted (the first one is named).
    {
      name: 'missingNodeSelector',
      expression:
        `${REQUIRED}.filter(k, !(k in variables.nodeSelector) || ` +
        `variables.nodeSelector[k] != ${REQUIRED}[k]).sort()`,
    },
  ),
  valueRule('nodeSelector', () => 'variables.missingNodeSelector.size() == 0', {
    rule: 'X8',
    what:
      `'nodeSelector with ' + (${MISSING_KEY} in variables.nodeSelector ? ` +
      `${MISSING_KEY} + '=' + variables.nodeSelector[${MISSING_KEY}] : 'no ' + ${MISSING_KEY})`,
    allowed: `'a nodeSelector with ' + ${REQUIRED}.map(k, k + '=' + ${REQUIRED}[k]).sort().join(', ')`,
    summary: 'the pod does not select the nodes of this project',
  }),
);

/** X8: no nodeName, in any project (it skips the scheduler, hence the node selector and NoSchedule taints). */
const nodeName: RuleParts = combine(
  specString('nodeName', 'nodeName'),
  valueRule('nodeName', (v) => `${v} == ''`, {
    rule: 'X8',
    what:
      `'nodeName ' + ${quoted('variables.nodeName')} + ` +
      "' (it skips the scheduler, the node selector and every NoSchedule taint)'",
    allowed: "'no nodeName (the scheduler places the pod)'",
    summary: 'a pod may not set spec.nodeName',
  }),
);

/** X8: every toleration allowed, or one of Kubernetes' node conditions. */
const tolerations: RuleParts = combine(
  declare(
    ...newAndOld(
      'tolerations',
      (o) => `(has(${o}.spec.tolerations) ? ${o}.spec.tolerations.map(t, ${fullToleration('t')}) : [])`,
      '[]',
    ),
  ),
  listRule('tolerations', (t) => `${t}.key.startsWith('${NODE_CONDITION_PREFIX}') || ${tolerationAllowed(t)}`, {
    rule: 'X8',
    what: (t) => `'toleration ' + ${describeToleration(t)}`,
    allowed: `${ALLOWED_TOLERATIONS} + ' (and ${NODE_CONDITION_PREFIX}* ones)'`,
    summary: 'a toleration is not allowed for this project',
  }),
);

/** The images of pod `o`: its containers', init and ephemeral containers', and image volumes' references. */
function imagesOf(o: string): string {
  const ofContainers = (field: string) =>
    `(has(${o}.spec.${field}) ? ${o}.spec.${field}.filter(c, has(c.image)).map(c, c.image) : [])`;
  const ofVolumes =
    `(has(${o}.spec.volumes) ? ` +
    `${o}.spec.volumes.filter(v, has(v.image) && has(v.image.reference)).map(v, v.image.reference) : [])`;
  const containers = ['containers', 'initContainers', 'ephemeralContainers'].map(ofContainers);
  return [...containers, ofVolumes].join(' + ');
}

/**
 * Image `i` matches prefix `p`: a prefix ending in `/` is a start; another is the image itself or goes on
 * with `/`, or, when it names a repository (has a `/`), with `:` (a tag) or `@` (a digest).
 */
const imageMatches = (p: string, i: string) =>
  `(${p}.endsWith('/') ? ${i}.startsWith(${p}) : ${i} == ${p} || ${i}.startsWith(${p} + '/') || ` +
  `(${p}.contains('/') && (${i}.startsWith(${p} + ':') || ${i}.startsWith(${p} + '@'))))`;

const PREFIXES = 'params.spec.registries.prefixes';

/** X9: every image from an allowed registry prefix. */
const images: RuleParts = combine(
  declare(...newAndOld('images', imagesOf, '[]')),
  listRule('images', (i) => `params.spec.registries.any || ${PREFIXES}.exists(p, ${imageMatches('p', i)})`, {
    rule: 'X9',
    what: (i) => `'image ' + ${quoted(i)}`,
    allowed: `(${PREFIXES}.size() > 0 ? 'images from ' + ${PREFIXES}.join(', ') : 'no image')`,
    summary: 'an image is not from a registry allowed for this project',
  }),
);

export const POD_RULES: RuleParts = combine(priorityClass, runtimeClass, nodeSelector, nodeName, tolerations, images);
