/**
 * One quantity, one name: the spelling under which Kubernetes' quota counts a resource. Imports
 * nothing, so the configuration (which refuses a price sheet naming both spellings) and the cost
 * arithmetic can both use it without importing each other.
 */

/** Pod resources Kubernetes' ResourceQuota counts under their bare name and their `requests.` form alike. */
const COUNTED_AS_REQUESTS = new Set(['cpu', 'memory', 'ephemeral-storage']);

/**
 * The name a quota resource is priced under: Kubernetes' pod evaluator counts a pod's requests of
 * `cpu`, `memory`, `ephemeral-storage` and `hugepages-<size>` under the bare name and under
 * `requests.<name>` alike, so both spellings are one quantity, priced as `requests.<name>`. Every other
 * name is its own.
 */
export function countedName(resource: string): string {
  return COUNTED_AS_REQUESTS.has(resource) || resource.startsWith('hugepages-') ? `requests.${resource}` : resource;
}
