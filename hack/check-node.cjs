// Preflight of every `npm run` script: stop with a clear message when this shell's Node is older than
// package.json's engines (today's dependencies need it; an older Node crashes deep inside undici instead).
// CommonJS on purpose, so that an old Node runs it as it is.
'use strict';
const path = require('path');

/** Whether Node `version` (22.18.0) is older than what `engines` (">=22.19") asks. */
function olderThan(version, engines) {
  const [wantMajor, wantMinor = 0] = String(engines)
    .replace(/^>=\s*/, '')
    .split('.')
    .map(Number);
  const [major, minor] = String(version).replace(/^v/, '').split('.').map(Number);
  return major < wantMajor || (major === wantMajor && minor < wantMinor);
}

function main() {
  const engines = require(path.join(__dirname, '..', 'package.json')).engines.node;
  if (!olderThan(process.versions.node, engines)) return;
  const projectNode = path.join(__dirname, '..', '.cache', 'node-v24', 'package', 'bin');
  const message = [
    `tenantgate needs Node ${engines} (package.json engines); this shell runs Node ${process.version}`,
    ` (${process.execPath}).\n`,
    "Put the project's Node first (make node installs it into .cache/):\n",
    `  make node && export PATH=${projectNode}:$PATH\n`,
    'or run through make (make build, make lint, make test-unit, make bench BENCH="NAME...").\n',
  ];
  process.stderr.write(message.join(''));
  process.exitCode = 1;
}

module.exports = { olderThan };
if (require.main === module) main();
