// `anneal --help` and `anneal runs ls` start within a few `node -e 0` (bench/startup) only while
// registering the commands loads no heavy module: the engines and envs (protobufjs, tar, ONNX),
// the control plane and worker (fastify, bullmq), telemetry (pino, prom-client) and the demo's
// progress bars load when their command runs. This runs the CLI's sources with a module-resolve
// hook that records every module and checks none of those was loaded.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from './cli-process.ts';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'anneal-imports-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HEAVY = [
  /\/packages\/engines\//,
  /\/packages\/envs\/src\/index\.ts$/,
  /\/packages\/telemetry\//,
  /\/apps\/(control-plane|worker)\//,
  /\/node_modules\/(protobufjs|tar|onnxruntime-node|fastify|bullmq|pino|prom-client|cli-progress)\//,
];

/** Every module URL the CLI resolves while running args from its sources. */
async function modulesLoadedBy(args: string[]): Promise<string[]> {
  const log = path.join(dir, `${args.join('-')}.log`);
  const hook =
    'data:text/javascript,' +
    encodeURIComponent(
      `import { appendFileSync } from 'node:fs';
       export async function resolve(s, c, next) {
         const r = await next(s, c);
         appendFileSync(${JSON.stringify(log)}, r.url + '\\n');
         return r;
       }`,
    );
  const register =
    'data:text/javascript,' +
    encodeURIComponent(
      `import { register } from 'node:module'; register(${JSON.stringify(hook)});`,
    );
  await run(
    process.execPath,
    [
      '--conditions=@anneal/source',
      '--import',
      register,
      '--import',
      'tsx',
      'apps/cli/src/main.ts',
      ...args,
    ],
    // runs ls against a closed port: the command starts, fails to connect and exits 1.
    { cwd: repoRoot, env: { ...process.env, ANNEAL_URL: 'http://127.0.0.1:9' } },
  ).catch((error: { code?: number }) => {
    if (error.code !== 1) throw error;
  });
  return readFileSync(log, 'utf8').trim().split('\n');
}

describe('CLI start-up imports', () => {
  it.each([[['--help']], [['runs', 'ls']]])('anneal %s loads no heavy module', async (args) => {
    const loaded = await modulesLoadedBy(args);
    expect(loaded.some((url) => url.endsWith('/apps/cli/src/main.ts'))).toBe(true);
    expect(loaded.filter((url) => HEAVY.some((heavy) => heavy.test(url)))).toEqual([]);
  });
});
