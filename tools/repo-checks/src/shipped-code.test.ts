// Nothing test-only is shipped: no workspace's build compiles a test, a test double or a fixture,
// and no dist/ (what the images copy) holds one. `npm test` builds first, so dist/ is current here.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './repo.ts';
import {
  buildSources,
  builtWorkspaces,
  filesUnder,
  importsTestingModule,
  testCodeReason,
} from './shipped-code.ts';

const root = REPO_ROOT;
const workspaces = builtWorkspaces(root);
const name = (dir: string) => path.relative(root, dir);

describe('shipped code', () => {
  it('finds the built workspaces', () => {
    expect(workspaces.map(name)).toEqual(
      expect.arrayContaining(['apps/worker', 'packages/engines', 'packages/protocol']),
    );
  });

  it.each(workspaces.map(name))('%s compiles only non-test sources under src/', (ws) => {
    const dir = path.join(root, ws);
    const sources = buildSources(dir);
    expect(sources.length).toBeGreaterThan(0);
    const offending = sources
      .map((file) => ({ file: path.relative(dir, file), reason: testCodeReason(dir, file) }))
      .filter(({ file, reason }) => reason !== undefined || !file.startsWith('src/'));
    expect(offending).toEqual([]);
  });

  it.each(workspaces.map(name))('%s/dist holds no test code', (ws) => {
    const dir = path.join(root, ws);
    const files = filesUnder(path.join(dir, 'dist'));
    expect(files.length, `${ws}/dist is missing: run npm run build`).toBeGreaterThan(0);
    const offending = files
      .map((file) => ({ file: path.relative(dir, file), reason: testCodeReason(dir, file) }))
      .filter(({ reason }) => reason !== undefined);
    expect(offending).toEqual([]);
  });

  it('tells test code from shipped code', () => {
    const ws = path.join(root, 'packages/engines');
    expect(testCodeReason(ws, path.join(ws, 'test/vllm/fake-server.ts'))).toBe(
      'under a test directory',
    );
    expect(testCodeReason(ws, path.join(ws, 'dist/vllm/testing/fake-server.js'))).toBeDefined();
    expect(testCodeReason(ws, path.join(ws, 'src/vllm/client.test.ts'))).toBe('a test file');
    expect(testCodeReason(ws, path.join(ws, 'src/embedded/test-fixtures.ts'))).toBeDefined();
    expect(testCodeReason(ws, path.join(ws, 'src/vllm/client.ts'))).toBeUndefined();
  });
  it('finds a testing module in import forms, not in data', () => {
    for (const code of [
      "import { FakeVllmServer } from '@anneal/engines/testing';",
      'export * from "../vllm/testing";',
      "const t = await import('@anneal/testing');",
      "import '@anneal/engines/testing';",
      'const { x } = require("./testing");',
    ]) {
      expect(importsTestingModule(code), code).toBe(true);
    }
    for (const code of [
      'var pkg = { devDependencies: { "@anneal/testing": "*" } };',
      "import { createLogger } from '@anneal/telemetry';",
      "const doc = 'see @anneal/engines/testing for the fakes';",
    ]) {
      expect(importsTestingModule(code), code).toBe(false);
    }
  });
});
