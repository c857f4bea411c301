// `anneal --help` and `anneal runs ls` start within a few `node -e 0` (bench/startup) only while
// registering the commands loads no heavy module: the engines and envs (protobufjs, tar, ONNX),
// the control plane and worker (fastify, bullmq), telemetry (pino, prom-client) and the demo's
// progress bars load when their command runs. This runs the CLI's sources with a module-resolve
// hook that records every module and checks none of those was loaded. The run spec's schemas
// (TypeBox) and the YAML parser load with the commands that parse specs, also in the bundle the
// bin runs: the last test bundles the sources as `npm run build` does and reads which sources the
// bundle's entry loads before it parses its arguments.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  /\/node_modules\/(yaml|@sinclair\/typebox)\//,
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

// Inside the repository, so the packages the bundle leaves external resolve from node_modules
// (as in bundle-workers.test.ts).
const cache = path.join(repoRoot, 'node_modules', '.cache');
mkdirSync(cache, { recursive: true });
const bundleDir = mkdtempSync(path.join(cache, 'anneal-startup-test-'));
afterAll(() => rmSync(bundleDir, { recursive: true, force: true }));

/** The sources of every chunk the bundle's entry imports statically (chunk by chunk, from their
 * source maps): what a start evaluates before commander parses the arguments. */
function bundledStartupSources(): string[] {
  const sources = new Set<string>();
  const pending = ['anneal.js'];
  const seen = new Set<string>();
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const code = readFileSync(path.join(bundleDir, file), 'utf8');
    // `import … from "./x.js"` and `import "./x.js"`; not `import("./x.js")`, loaded on use
    for (const match of code.matchAll(/(?:\bfrom|\bimport)\s*"\.\/([^"]+\.js)"/g)) {
      pending.push(match[1]!);
    }
    const map = JSON.parse(readFileSync(path.join(bundleDir, `${file}.map`), 'utf8')) as {
      sources: string[];
    };
    for (const source of map.sources) {
      sources.add(path.relative(repoRoot, path.resolve(bundleDir, source)));
    }
  }
  return [...sources];
}

describe('the bundled CLI at start-up', () => {
  it('loads neither the spec schemas (TypeBox) nor the YAML parser', async () => {
    await run(process.execPath, ['scripts/bundle-cli.mjs', '--outdir', bundleDir], {
      cwd: repoRoot,
      timeout: 120_000,
    });
    const sources = bundledStartupSources();
    expect(sources).toContain('apps/cli/src/main.ts');
    expect(sources.some((s) => s.includes('node_modules/commander/'))).toBe(true);
    expect(sources.filter((s) => /node_modules\/(yaml|@sinclair\/typebox)\//.test(s))).toEqual([]);
  });
});
