/** `make crd`: prints the Project CRD generated from the one JSON Schema (src/validate/schema). */
import { renderCrdYaml } from '../src/validate/schema/crd.js';

process.stdout.write(renderCrdYaml());
