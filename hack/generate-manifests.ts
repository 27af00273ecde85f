/** `make manifests`: writes manifests/{crd,controller,webhook,rbac} and manifests/kustomization.yaml from the chart. */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_DIRS, manifestsFromChart } from './chart-manifests.js';

const manifests = fileURLToPath(new URL('../manifests', import.meta.url));
const files = await manifestsFromChart();
for (const dir of GENERATED_DIRS) {
  for (const entry of await readdir(join(manifests, dir)).catch(() => [] as string[])) {
    if (entry.endsWith('.yaml') && !files.has(`${dir}/${entry}`)) await rm(join(manifests, dir, entry));
  }
}
for (const [path, text] of files) {
  await mkdir(dirname(join(manifests, path)), { recursive: true });
  await writeFile(join(manifests, path), text);
}
process.stderr.write(`wrote ${files.size} files under manifests/\n`);
