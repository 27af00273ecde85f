/**
 * The rules of the policy tenantgate-allow-pods (Pods and pods/ephemeralcontainers): X1 priority class,
 * X6 runtime class, X8 node placement (node selector, nodeName, tolerations), X9 images
 * (docs/adr/0095-allow-lists-in-the-api-server.md, "What each rule judges"). In the offline form's
 * order (checkPodSpec), so the first refusal names the same rule.
 *
 * Every pod create and update in a project namespace runs them, so the test of each rule is written for
 * the common pod: it reads the object's fields in place and stops at the first answer — no list, map or
 * variable is built while a pod is admitted, the cheapest test comes first (a toleration of Kubernetes'
 * node conditions, as every pod carries two, is admitted by its key alone), and the old object is read only
 * on UPDATE (`oldObject != null`), for what the update keeps. The offending item is found and described
 * only in the message, after a refusal (guardedValidation, cel.ts), and X8's three checks share one
 * validation (guardedChecks): the API server evaluates each validation and each message on every request.
 */
import {
  guardedChecks,
  guardedValidation,
  listed,
  quoted,
  type GuardedCheck,
  type RuleParts,
  type Validation,
} from './cel.js';
import {
  ALLOWED_TOLERATIONS,
  describeToleration,
  fullToleration,
  NODE_CONDITION_PREFIX,
  tolerationAllowed,
  tolerationFieldsAllowed,
  tolerationFieldsOf,
  type TolerationFields,
} from './tolerations.js';

const SYSTEM_PREFIX = 'system-';

/**
 * `test` when `field` is set, else true: `!has(field) || test` with one call (`!`) less, which the API
 * server's cost tracking pays for with an allocation.
 */
const whenSet = (field: string, test: string) => `(has(${field}) ? ${test} : true)`;

/** A string field of pod `o`'s spec, '' when unset. */
const specString = (o: string, field: string) => `(has(${o}.spec.${field}) ? ${o}.spec.${field} : '')`;

/**
 * A string field of the spec that a rule judges when set: admitted when unset or '', when `allowed` (if
 * given), or (UPDATE) when the old pod had the same value.
 */
function stringFieldOk(field: string, allowed?: (value: string) => string): string {
  const value = `object.spec.${field}`;
  return whenSet(
    value,
    `${value} == '' || ${allowed ? `${allowed(value)} || ` : ''}` +
      `(oldObject != null && ${value} == ${specString('oldObject', field)})`,
  );
}

const SYSTEM_CLASSES = 'params.spec.systemPriorityClasses';
const CLASS_NAMES = 'params.spec.priorityClasses.names';
const ALLOWED_PRIORITY_CLASSES =
  `(params.spec.priorityClasses.any ? 'any PriorityClass but ${SYSTEM_PREFIX}*' + ` +
  `(${SYSTEM_CLASSES}.size() > 0 ? ' (and ' + ${SYSTEM_CLASSES}.join(', ') + ')' : '') : ` +
  `${listed(`(${CLASS_NAMES} + ${SYSTEM_CLASSES}.filter(c, !(c in ${CLASS_NAMES})))`, 'no PriorityClass')})`;

/** X1: a system-* class only when the Project names it, another when any or listed. */
const priorityClass: Validation = guardedValidation(
  stringFieldOk(
    'priorityClassName',
    (v) =>
      `(${v}.startsWith('${SYSTEM_PREFIX}') ? ${v} in ${SYSTEM_CLASSES} : ` +
      `(params.spec.priorityClasses.any || ${v} in ${CLASS_NAMES}))`,
  ),
  {
    rule: 'X1',
    what: `'priorityClassName ' + ${quoted(specString('object', 'priorityClassName'))}`,
    allowed: ALLOWED_PRIORITY_CLASSES,
    summary: 'the priorityClassName is not allowed for this project',
  },
);

/** X6: a runtime class, when set, any or listed. */
const runtimeClass: Validation = guardedValidation(
  stringFieldOk(
    'runtimeClassName',
    (v) => `params.spec.runtimeClasses.any || ${v} in params.spec.runtimeClasses.names`,
  ),
  {
    rule: 'X6',
    what: `'runtimeClassName ' + ${quoted(specString('object', 'runtimeClassName'))}`,
    allowed: listed('params.spec.runtimeClasses.names', 'no RuntimeClass'),
    summary: 'the runtimeClassName is not allowed for this project',
  },
);

const REQUIRED = 'params.spec.nodeSelector';
const NODE_SELECTOR = 'object.spec.nodeSelector';
/** Pod `o`'s node selector, {} when unset. */
const nodeSelectorOf = (o: string) => `(has(${o}.spec.nodeSelector) ? ${o}.spec.nodeSelector : {})`;
/** The first (sorted) required label the pod does not select with its value, as `m` in `text` (a message). */
const firstMissingLabel = (text: string) =>
  `${REQUIRED}.filter(k, !(k in ${nodeSelectorOf('object')}) || ` +
  `${nodeSelectorOf('object')}[k] != ${REQUIRED}[k]).sort().map(m, ${text})[0]`;

/** X8: every label of the AllowList's node selector selected with its value. */
const nodeSelector: GuardedCheck = {
  ok:
    `(has(${NODE_SELECTOR}) ? ` +
    `${REQUIRED}.all(k, k in ${NODE_SELECTOR} && ${NODE_SELECTOR}[k] == ${REQUIRED}[k]) : ` +
    `${REQUIRED}.size() == 0) || ` +
    `(oldObject != null && ${nodeSelectorOf('object')} == ${nodeSelectorOf('oldObject')})`,
  refusal: {
    what:
      `'nodeSelector with ' + ` +
      firstMissingLabel(`m in ${nodeSelectorOf('object')} ? m + '=' + ${nodeSelectorOf('object')}[m] : 'no ' + m`),
    allowed: `'a nodeSelector with ' + ${REQUIRED}.map(k, k + '=' + ${REQUIRED}[k]).sort().join(', ')`,
  },
};

/** X8: no nodeName, in any project (it skips the scheduler, hence the node selector and NoSchedule taints). */
const nodeName: GuardedCheck = {
  ok: stringFieldOk('nodeName'),
  refusal: {
    what:
      `'nodeName ' + ${quoted(specString('object', 'nodeName'))} + ` +
      "' (it skips the scheduler, the node selector and every NoSchedule taint)'",
    allowed: "'no nodeName (the scheduler places the pod)'",
  },
};

/** Tolerations `o` and `t` (read with their defaults) are the same toleration. */
const sameToleration = (o: TolerationFields, t: TolerationFields) =>
  `${o.key} == ${t.key} && ${o.operator} == ${t.operator} && ${o.value} == ${t.value} && ${o.effect} == ${t.effect}`;

const TOLERATION = tolerationFieldsOf('t');
/** The pod's tolerations the old pod lacks and the AllowList refuses, each with every field (a message's). */
const DENIED_TOLERATIONS =
  `object.spec.tolerations.map(t, ${fullToleration('t')}).filter(x, ` +
  `!(oldObject != null && has(oldObject.spec.tolerations) && ` +
  `x in oldObject.spec.tolerations.map(t, ${fullToleration('t')})) && ` +
  `!(x.key.startsWith('${NODE_CONDITION_PREFIX}') || ${tolerationAllowed('x')}))`;

/** X8: every toleration allowed, or one of Kubernetes' node conditions, or (UPDATE) the old pod's. */
const tolerations: GuardedCheck = {
  ok: whenSet(
    'object.spec.tolerations',
    `object.spec.tolerations.all(t, ` +
      `(has(t.key) && t.key.startsWith('${NODE_CONDITION_PREFIX}')) || ${tolerationFieldsAllowed(TOLERATION)} || ` +
      `(oldObject != null && has(oldObject.spec.tolerations) && ` +
      `oldObject.spec.tolerations.exists(o, ${sameToleration(tolerationFieldsOf('o'), TOLERATION)})))`,
  ),
  refusal: {
    what: `'toleration ' + ${DENIED_TOLERATIONS}.map(d, ${describeToleration('d')})[0]`,
    allowed: `${ALLOWED_TOLERATIONS} + ' (and ${NODE_CONDITION_PREFIX}* ones)'`,
  },
};

/** X8, node placement: the node selector, nodeName, the tolerations, in this order (one validation). */
const nodePlacement: Validation = guardedChecks(
  'X8',
  "the pod's node placement (node selector, nodeName or a toleration) is not allowed for this project",
  [nodeSelector, nodeName, tolerations],
);

const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'];

/** Tests `test(i)` on every image `i` of pod `o` (containers', init and ephemeral containers', image volumes'). */
function everyImage(o: string, test: (image: string) => string): string {
  const ofContainers = (field: string) =>
    whenSet(`${o}.spec.${field}`, `${o}.spec.${field}.all(c, ${whenSet('c.image', test('c.image'))})`);
  const ofVolumes = whenSet(
    `${o}.spec.volumes`,
    `${o}.spec.volumes.all(v, has(v.image) && has(v.image.reference) ? ${test('v.image.reference')} : true)`,
  );
  return [...CONTAINER_LISTS.map(ofContainers), ofVolumes].join(' && ');
}

/** Whether image `i` is one of pod `o`'s (its comprehensions name `oc` and `ov`). */
function hasImage(o: string, i: string): string {
  const inContainers = (field: string) =>
    `(has(${o}.spec.${field}) && ${o}.spec.${field}.exists(oc, has(oc.image) && oc.image == ${i}))`;
  const inVolumes =
    `(has(${o}.spec.volumes) && ${o}.spec.volumes.exists(ov, ` +
    `has(ov.image) && has(ov.image.reference) && ov.image.reference == ${i}))`;
  return `(${[...CONTAINER_LISTS.map(inContainers), inVolumes].join(' || ')})`;
}

/** The images of pod `o` in order (containers, init and ephemeral containers, image volumes): a message's. */
function imagesOf(o: string): string {
  const ofContainers = (field: string) =>
    `(has(${o}.spec.${field}) ? ${o}.spec.${field}.filter(c, has(c.image)).map(c, c.image) : [])`;
  const ofVolumes =
    `(has(${o}.spec.volumes) ? ` +
    `${o}.spec.volumes.filter(v, has(v.image) && has(v.image.reference)).map(v, v.image.reference) : [])`;
  return `(${[...CONTAINER_LISTS.map(ofContainers), ofVolumes].join(' + ')})`;
}

/**
 * Image `i` matches prefix `p`: a prefix ending in `/` is a start; another is the image itself or goes on
 * with `/`, or, when it names a repository (has a `/`), with `:` (a tag) or `@` (a digest).
 */
const imageMatches = (p: string, i: string) =>
  `(${p}.endsWith('/') ? ${i}.startsWith(${p}) : ${i} == ${p} || ${i}.startsWith(${p} + '/') || ` +
  `(${p}.contains('/') && (${i}.startsWith(${p} + ':') || ${i}.startsWith(${p} + '@'))))`;

const PREFIXES = 'params.spec.registries.prefixes';
const fromPrefix = (i: string) => `${PREFIXES}.exists(p, ${imageMatches('p', i)})`;
/** The first image the old pod lacks that no prefix admits (a message's). */
const FIRST_DENIED_IMAGE =
  `${imagesOf('object')}.filter(x, !(oldObject != null && x in ${imagesOf('oldObject')}) && ` +
  `!${fromPrefix('x')})[0]`;

/** X9: every image from an allowed registry prefix, or (UPDATE) the old pod's. */
const images: Validation = guardedValidation(
  `params.spec.registries.any || ` +
    `(${everyImage('object', (i) => `${fromPrefix(i)} || (oldObject != null && ${hasImage('oldObject', i)})`)})`,
  {
    rule: 'X9',
    what: `'image ' + ${quoted(FIRST_DENIED_IMAGE)}`,
    allowed: `(${PREFIXES}.size() > 0 ? 'images from ' + ${PREFIXES}.join(', ') : 'no image')`,
    summary: 'an image is not from a registry allowed for this project',
  },
);

export const POD_RULES: RuleParts = {
  variables: [],
  validations: [priorityClass, runtimeClass, nodePlacement, images],
};
