/** `npm run` stops with a clear message on a Node older than package.json's engines (hack/check-node.cjs). */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const { olderThan } = createRequire(import.meta.url)('../../hack/check-node.cjs') as {
  olderThan(version: string, engines: string): boolean;
};
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  scripts: Record<string, string>;
};

describe('the Node preflight', () => {
  it("refuses a Node older than the engines' minor, and takes that minor and every later one", () => {
    expect(olderThan('v20.20.2', '>=22.19')).toBe(true);
    expect(olderThan('22.18.9', '>=22.19')).toBe(true);
    expect(olderThan('22.19.0', '>=22.19')).toBe(false);
    expect(olderThan('23.0.0', '>=22.19')).toBe(false);
    expect(olderThan('24.21.0', '>=22.19')).toBe(false);
  });

  it('runs first in every npm run script but postinstall', () => {
    const unchecked = Object.entries(pkg.scripts)
      .filter(([name, command]) => name !== 'postinstall' && !command.startsWith('node hack/check-node.cjs && '))
      .map(([name]) => name);
    expect(unchecked).toEqual([]);
    expect(pkg.engines.node).toBe('>=22.19');
  });
});
