#!/usr/bin/env node
/**
 * The executable `kubectl-tenantgate`: kubectl runs it for `kubectl tenantgate …` when it is on PATH
 * (npm's bin, or krew). The commands are in src/kubectl/cli.ts; docs/kubectl-plugin.md.
 */
import { main } from '../kubectl/cli.js';

process.exitCode = await main(process.argv.slice(2));
