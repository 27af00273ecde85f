/** Starts one real control plane for the whole integration run and shares its coordinates. */
import type { TestProject } from 'vitest/node';
import { ControlPlane, type ClusterInfo } from './devcluster/controlplane.js';

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: ClusterInfo;
  }
}

let controlPlane: ControlPlane | undefined;

export async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  controlPlane = await ControlPlane.start();
  process.stderr.write(
    `[global-setup] control plane ${controlPlane.info.server} ready in ${Date.now() - started} ms\n`,
  );
  project.provide('cluster', controlPlane.info);
}

export async function teardown(): Promise<void> {
  await controlPlane?.stop({ keepData: process.env.TG_KEEP_CLUSTER === '1' });
}
