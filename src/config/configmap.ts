/** The shipped `tenantgate-config` ConfigMap: the built-in defaults written out, so operators edit a complete file. */
import { stringify } from 'yaml';
import { DEFAULT_CONFIG, type TenantgateConfig } from './config.js';

const CONFIG_MAP_NAME = 'tenantgate-config';
const CONFIG_FILE_KEY = 'tenantgate.yaml';
export const CONFIG_MAP_PATH = 'manifests/config/tenantgate-config.yaml';

const HEADER = `# generated from DEFAULT_CONFIG (src/config/config.ts) by hack/generate-config.ts (\`make config\`): the
# defaults spelled out. Edit your copy; every key is checked at start-up (unknown keys and out-of-range
# values are errors). The webhook and the controller mount it at /etc/tenantgate/tenantgate.yaml.
`;

export function configMapYaml(config: TenantgateConfig = DEFAULT_CONFIG, namespace = config.systemNamespace): string {
  const file = stringify(config, { lineWidth: 0 });
  return (
    HEADER +
    stringify(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: CONFIG_MAP_NAME,
          namespace,
          labels: { 'app.kubernetes.io/name': 'tenantgate', 'app.kubernetes.io/part-of': 'tenantgate' },
        },
        data: { [CONFIG_FILE_KEY]: file },
      },
      { lineWidth: 0, blockQuote: 'literal' },
    )
  );
}
