/**
 * The rules of the policy tenantgate-allow-ingresses (networking.k8s.io/v1): H2 the class, by
 * spec.ingressClassName and the annotation kubernetes.io/ingress.class; H1 every hostname
 * (docs/adr/0095-allow-lists-in-the-api-server.md). H2 first, as in the offline form (checkIngress).
 */
import { combine, fieldOr, kept, listed, newAndOld, quoted, validation, type RuleParts } from './cel.js';
import { hostnameListRule } from './hostnames.js';

const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

const NAMES = 'params.spec.ingressClasses.names';
const NAME = 'variables.className';
const ANNOTATION = 'variables.classAnnotation';

const annotationOf = (o: string) =>
  `(has(${o}.metadata.annotations) && '${INGRESS_CLASS_ANNOTATION}' in ${o}.metadata.annotations ? ` +
  `${o}.metadata.annotations['${INGRESS_CLASS_ANNOTATION}'] : '')`;

/** Unless any class goes: at least one of the two given, each given one listed (both kept: not judged). */
const classAllowed =
  `params.spec.ingressClasses.any || (${kept('className')} && ${kept('classAnnotation')}) || ` +
  `((${NAME} != '' || ${ANNOTATION} != '') && (${NAME} == '' || ${NAME} in ${NAMES}) && ` +
  `(${ANNOTATION} == '' || ${ANNOTATION} in ${NAMES}))`;

const refusedClass =
  `(${NAME} == '' && ${ANNOTATION} == '' ? ` +
  `'an Ingress without ingressClassName or ${INGRESS_CLASS_ANNOTATION} (the default class)' : ` +
  `${NAME} != '' && !(${NAME} in ${NAMES}) ? 'ingressClassName ' + ${quoted(NAME)} : ` +
  `'annotation ${INGRESS_CLASS_ANNOTATION} ' + ${quoted(ANNOTATION)})`;

const ingressClass: RuleParts = {
  variables: [
    ...newAndOld('className', (o) => fieldOr(`${o}.spec`, 'ingressClassName', "''"), "''"),
    ...newAndOld('classAnnotation', annotationOf, "''"),
  ],
  validations: [
    validation(classAllowed, {
      rule: 'H2',
      what: refusedClass,
      allowed: listed(NAMES, 'no IngressClass'),
      summary: 'the IngressClass is not allowed for this project',
    }),
  ],
};

/** An Ingress's hostnames, lowercased: '' for a defaultBackend and for a rule without host (every hostname). */
const hostsOf = (o: string) =>
  `(has(${o}.spec.defaultBackend) ? [''] : []) + ` +
  `(has(${o}.spec.rules) ? ${o}.spec.rules.map(r, has(r.host) ? r.host.lowerAscii() : '') : []) + ` +
  `(has(${o}.spec.tls) ? ${o}.spec.tls.filter(t, has(t.hosts)).map(t, t.hosts.map(h, h.lowerAscii())).flatten() : [])`;

const hosts: RuleParts = hostnameListRule('hosts', hostsOf, {
  named: 'host',
  none: 'a rule without host or a defaultBackend',
  summary: 'a hostname is not allowed for this project',
});

export const INGRESS_RULES: RuleParts = combine(ingressClass, hosts);
