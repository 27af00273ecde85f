// Preflight of every `npm run` script: stop with a clear message when this shell's Node is older than
// package.json's engines (today's dependencies need it; an older Node crashes deep inside undici instead).
// CommonJS on purpose, so that an old Node runs it as it is.
'use strict';
const path = require('path');
const pkg = require(path.join(__dirname, '..', 'package.json'));

const wanted = String(pkg.engines.node).replace(/^>=\s*/, '');
const [wantMajor, wantMinor] = wanted.split('.').map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
if (major > wantMajor || (major === wantMajor && minor >= (wantMinor || 0))) process.exit(0);

const projectNode = path.join(__dirname, '..', '.cache', 'node-v24', 'package', 'bin');
const message = [
  `tenantgate needs Node >= ${wanted} (package.json engines); this shell runs Node ${process.version}`,
  ` (${process.execPath}).\n`,
  "Put the project's Node first (make node installs it into .cache/):\n",
  `  make node && export PATH=${projectNode}:$PATH\n`,
  'or run through make (make build, make lint, make test-unit, make bench BENCH="NAME...").\n',
];
process.stderr.write(message.join(''));
process.exit(1);
