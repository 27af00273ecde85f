/** N1–N4: names of projects and their namespaces. */
import { projectPrefix, type TenantgateConfig } from '../../config/config.js';
import { isDNS1123Label } from '../names.js';
import { LABEL_PROJECT, type FieldPath, type Project, type Snapshot, type Violation } from '../types.js';

const MAX_PROJECT_NAME = 40;

/** N1 */
export function checkProjectName(name: string | undefined): Violation[] {
  const path: FieldPath = ['metadata', 'name'];
  if (!name)
    return [
      {
        rule: 'N1',
        path,
        message: 'Project has no metadata.name; a DNS-1123 label of at most 40 characters is required',
      },
    ];
  const problems = isDNS1123Label(name);
  if (name.length > MAX_PROJECT_NAME)
    problems.push(`must be no more than ${MAX_PROJECT_NAME} characters (has ${name.length})`);
  if (problems.length === 0) return [];
  return [{ rule: 'N1', path, message: `Project name ${JSON.stringify(name)} is not allowed: ${problems.join('; ')}` }];
}

/** N2 for a namespace outside any project: its name is not reserved. */
export function checkReservedName(config: TenantgateConfig, name: string): Violation[] {
  const reserved = isReservedName(config, name);
  return reserved
    ? [
        {
          rule: 'N2',
          path: ['metadata', 'name'],
          message: `namespace ${JSON.stringify(name)} is not allowed: ${reserved}`,
        },
      ]
    : [];
}

function isReservedName(config: TenantgateConfig, name: string): string | undefined {
  if (config.reserved.names.includes(name)) return `the name ${JSON.stringify(name)} is reserved`;
  const prefix = config.reserved.prefixes.find((p) => name.startsWith(p));
  return prefix ? `the prefix ${JSON.stringify(prefix)} is reserved` : undefined;
}

/** N2: a namespace of `project` is a DNS-1123 label that starts with its prefix plus a suffix, and is not reserved. */
export function checkNamespaceName(
  config: TenantgateConfig,
  project: string,
  name: string,
  path: FieldPath = ['metadata', 'name'],
): Violation[] {
  const problems = isDNS1123Label(name);
  const prefix = projectPrefix(config, project);
  if (!name.startsWith(prefix) || name.length === prefix.length) {
    problems.push(
      `a namespace of project ${project} must start with ${JSON.stringify(prefix)} followed by a non-empty ` +
        `suffix (e.g. ${prefix}api)`,
    );
  }
  const reserved = isReservedName(config, name);
  if (reserved) problems.push(reserved);
  if (problems.length === 0) return [];
  return [{ rule: 'N2', path, message: `namespace ${JSON.stringify(name)} is not allowed: ${problems.join('; ')}` }];
}

function overlap(project: string, mine: string, other: string, theirs: string): Violation {
  return {
    rule: 'N4',
    path: ['metadata', 'name'],
    message:
      `project ${project}: its namespace prefix ${JSON.stringify(mine)} overlaps the prefix ` +
      `${JSON.stringify(theirs)} of project ${other} (a namespace ${mine.length > theirs.length ? mine : theirs}x ` +
      `would match both); choose a name that neither extends nor is extended by another project's`,
  };
}

/** N4 for one project against others (admission: one new project vs the cluster's). */
export function checkPrefixOverlap(config: TenantgateConfig, project: string, others: Iterable<string>): Violation[] {
  const mine = projectPrefix(config, project);
  const out: Violation[] = [];
  for (const other of others) {
    if (other === project) continue;
    const theirs = projectPrefix(config, other);
    if (mine.startsWith(theirs) || theirs.startsWith(mine)) out.push(overlap(project, mine, other, theirs));
  }
  return out;
}

/**
 * N4 over a whole set of projects in O(total name length): a prefix overlaps another exactly when
 * one is a leading part of the other, so each project looks up its own leading parts in an index.
 * Returns, per input index, the violations of that project (both sides of a pair are reported).
 */
export function findPrefixOverlaps(config: TenantgateConfig, projects: string[]): Map<number, Violation[]> {
  const byPrefix = new Map<string, number[]>();
  const prefixes = projects.map((p) => projectPrefix(config, p));
  prefixes.forEach((prefix, i) => {
    if (!projects[i]) return;
    const list = byPrefix.get(prefix);
    if (list) list.push(i);
    else byPrefix.set(prefix, [i]);
  });
  const out = new Map<number, Violation[]>();
  const report = (i: number, j: number) => {
    const list = out.get(i) ?? [];
    list.push(overlap(projects[i]!, prefixes[i]!, projects[j]!, prefixes[j]!));
    out.set(i, list);
  };
  prefixes.forEach((mine, i) => {
    if (!projects[i]) return;
    for (let end = 1; end < mine.length; end++) {
      for (const j of byPrefix.get(mine.slice(0, end)) ?? []) {
        if (projects[j] === projects[i]) continue;
        report(i, j);
        report(j, i);
      }
    }
  });
  return out;
}

/** The project with the longest prefix `text` starts with; `bareAllowed`: `text` may be the prefix itself. */
function longestPrefixProject(
  config: TenantgateConfig,
  projects: Iterable<Project>,
  text: string,
  bareAllowed: boolean,
): Project | undefined {
  let best: Project | undefined;
  let bestLength = -1;
  for (const p of projects) {
    const prefix = projectPrefix(config, p.metadata.name ?? '');
    if (text.startsWith(prefix) && (bareAllowed || text.length > prefix.length) && prefix.length > bestLength) {
      best = p;
      bestLength = prefix.length;
    }
  }
  return best;
}

/** The project whose prefix a namespace name carries (N4 guarantees at most one; the longest wins otherwise). */
export function projectByPrefix(
  config: TenantgateConfig,
  projects: Iterable<Project>,
  namespace: string,
): Project | undefined {
  return longestPrefixProject(config, projects, namespace, false);
}

/**
 * The project a namespace created with `metadata.generateName` belongs to, before the apiserver has
 * generated its name (the mutating webhook sees no name): the project whose prefix the generateName
 * starts with. The generated name appends five characters, so the prefix alone (`payments-`) is enough.
 * The validating webhook sees the generated name and judges it like any other (N2, T2, T4).
 */
export function projectByGenerateName(
  config: TenantgateConfig,
  projects: Iterable<Project>,
  generateName: string,
): Project | undefined {
  return longestPrefixProject(config, projects, generateName, true);
}

/**
 * N3 at admission: each namespace a Project declares belongs to no other project, neither by another
 * Project's declaration nor by the label of a namespace that already exists.
 */
export function checkDeclaredNamespacesFree(
  project: Project,
  others: readonly Project[],
  snapshot: Snapshot,
): Violation[] {
  const name = project.metadata.name ?? '';
  const out: Violation[] = [];
  (project.spec.namespaces ?? []).forEach((declared, i) => {
    const path = ['spec', 'namespaces', i, 'name'];
    const elsewhere = others.find((p) => (p.spec.namespaces ?? []).some((n) => n.name === declared.name));
    if (elsewhere)
      out.push({
        rule: 'N3',
        path,
        message:
          `namespace ${declared.name} is already declared by project ${elsewhere.metadata.name}; a namespace ` +
          `belongs to at most one project`,
      });
    const owner = snapshot.namespace(declared.name)?.metadata.labels?.[LABEL_PROJECT];
    if (owner && owner !== name && owner !== elsewhere?.metadata.name) {
      out.push({
        rule: 'N3',
        path,
        message:
          `namespace ${declared.name} already exists in the cluster labelled for project ${owner}; a namespace ` +
          `belongs to at most one project`,
      });
    }
  });
  return out;
}

/** N3 offline: a project is declared once in the input (`first` is the index of its first declaration). */
export function projectDeclaredTwice(project: string, first: number): Violation {
  return {
    rule: 'N3',
    path: ['metadata', 'name'],
    message: `project ${project} is declared twice (the first declaration is document ${first + 1} of the input)`,
  };
}

/** N3 offline: a project declares a namespace once per cluster. */
export function namespaceDeclaredTwice(
  project: string,
  namespace: string,
  path: FieldPath,
  first: number,
  again: number,
): Violation {
  return {
    rule: 'N3',
    path,
    message: `namespace ${namespace} is declared twice in project ${project} (entries ${first} and ${again})`,
  };
}

/** N3 offline: two projects of the input declare the same namespace. */
export function namespaceDeclaredByOther(
  project: string,
  namespace: string,
  path: FieldPath,
  other: string,
): Violation {
  return {
    rule: 'N3',
    path,
    message:
      `namespace ${namespace} is declared by project ${project} and by project ${other}; a namespace belongs to at ` +
      `most one project`,
  };
}
