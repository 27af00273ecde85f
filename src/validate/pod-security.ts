/**
 * Pod Security Standards on project namespaces: the `pod-security.kubernetes.io/<mode>` labels the
 * apiserver's PodSecurity admission reads. tenantgate.yaml's `podSecurity` is the platform's default;
 * a Project's `spec.podSecurity` (written in git by the platform team) overrides it mode by mode.
 * The mutating webhook sets these labels on CREATE, render emits them, the controller repairs them,
 * and T7 keeps non-privileged subjects off them. Pure.
 */
export const POD_SECURITY_LEVELS = ['privileged', 'baseline', 'restricted'] as const;
type PodSecurityLevel = (typeof POD_SECURITY_LEVELS)[number];

const POD_SECURITY_MODES = ['enforce', 'warn', 'audit'] as const;
type PodSecurityMode = (typeof POD_SECURITY_MODES)[number];

export type PodSecurityLevels = Record<PodSecurityMode, PodSecurityLevel>;

const POD_SECURITY_LABEL_PREFIX = 'pod-security.kubernetes.io/';

function podSecurityLabelKey(mode: PodSecurityMode): string {
  return `${POD_SECURITY_LABEL_PREFIX}${mode}`;
}

/** The levels a project's namespaces run at: the Project's own, mode by mode, over the cluster default. */
function podSecurityLevels(
  clusterDefault: PodSecurityLevels,
  project: { spec: { podSecurity?: Partial<PodSecurityLevels> } },
): PodSecurityLevels {
  const own = project.spec.podSecurity ?? {};
  return {
    enforce: own.enforce ?? clusterDefault.enforce,
    warn: own.warn ?? clusterDefault.warn,
    audit: own.audit ?? clusterDefault.audit,
  };
}

/** The labels every namespace of the project carries, e.g. `pod-security.kubernetes.io/enforce: baseline`. */
export function podSecurityLabels(
  clusterDefault: PodSecurityLevels,
  project: { spec: { podSecurity?: Partial<PodSecurityLevels> } },
): Record<string, string> {
  const levels = podSecurityLevels(clusterDefault, project);
  const out: Record<string, string> = {};
  for (const mode of POD_SECURITY_MODES) out[podSecurityLabelKey(mode)] = levels[mode];
  return out;
}
