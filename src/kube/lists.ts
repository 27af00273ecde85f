/** Lists of the three kinds tenantgate watches, as plain JSON (what watches deliver). */
import * as k8s from '@kubernetes/client-node';
import { API_GROUP } from '../validate/types.js';

export const PROJECT_VERSION = 'v1alpha1';
export const PROJECT_PLURAL = 'projects';
export const PROJECTS_PATH = `/apis/${API_GROUP}/${PROJECT_VERSION}/${PROJECT_PLURAL}`;

/** Plain JSON, as a watch would deliver it (client-node's typed lists hold Date objects). */
export function plain<T>(obj: unknown): T {
  return JSON.parse(JSON.stringify(obj)) as T;
}

type List = k8s.KubernetesListObject<k8s.KubernetesObject>;

export class ClusterLists {
  readonly core: k8s.CoreV1Api;
  readonly custom: k8s.CustomObjectsApi;

  constructor(readonly kubeConfig: k8s.KubeConfig) {
    this.core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  }

  async listProjects(labelSelector?: string): Promise<List> {
    return (await this.custom.listClusterCustomObject({ group: API_GROUP, version: PROJECT_VERSION, plural: PROJECT_PLURAL, ...(labelSelector ? { labelSelector } : {}) })) as List;
  }
  async listNamespaces(labelSelector?: string): Promise<List> {
    return plain(await this.core.listNamespace(labelSelector ? { labelSelector } : {}));
  }
  async listQuotas(): Promise<List> {
    return plain(await this.core.listResourceQuotaForAllNamespaces());
  }
}
