/** `make config`: prints the tenantgate-config ConfigMap holding the built-in defaults. */
import { configMapYaml } from '../src/config/configmap.js';

process.stdout.write(configMapYaml());
