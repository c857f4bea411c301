#!/usr/bin/env node
// Entry point of the root npm scripts: makes the machine's prerequisites present (scripts/
// setup.mjs: installs what is missing when the package manager may, else one message listing
// whatever is missing), installs dependencies when
// missing, builds dist/ (scripts/build.mjs, incremental), finds or starts Redis, then runs
// the task (test, soak, bench, demo alike). Node built-ins only (it runs before `npm ci`).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureRedis } from './redis.mjs';
import { ensurePrerequisites } from './setup.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
// onnxruntime-node's install script would download CUDA libraries; CPU binaries are bundled.
const env = {
  ...process.env,
  ONNXRUNTIME_NODE_INSTALL: 'skip',
  TURBO_TELEMETRY_DISABLED: '1',
  DO_NOT_TRACK: '1',
};

function ensureDependencies() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  const fresh =
    existsSync(marker) && (!existsSync(lock) || statSync(marker).mtimeMs >= statSync(lock).mtimeMs);
  if (fresh) return;
  console.error('anneal: installing dependencies (npm ci)…');
  const args = existsSync(lock)
    ? ['ci', '--no-audit', '--no-fund']
    : ['install', '--no-audit', '--no-fund'];
  const result = spawnSync('npm', args, { cwd: root, env, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

function run(command, args, extraEnv = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...env, ...extraEnv },
      stdio: 'inherit',
    });
    const forward = (signal) => child.kill(signal);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** Compiles dist/ (tsc -b is incremental: seconds when nothing changed). */
const build = () => run(process.execPath, [path.join(root, 'scripts/build.mjs')]);

/** Builds, then runs fn; a failed build stops the task with its exit code. */
async function afterBuild(fn) {
  const code = await build();
  return code === 0 ? fn() : code;
}

async function withRedis(fn) {
  let redis;
  try {
    redis = await ensureRedis(env);
  } catch (err) {
    console.error(`anneal: ${err.message}`);
    return 1;
  }
  console.error(`anneal: using Redis at ${redis.url} (${redis.source})`);
  try {
    return await fn({ REDIS_URL: redis.url });
  } finally {
    redis.stop();
  }
}

/** What the dependency rules cover: the sources that ship (tests are excluded by the config). */
const DEPCRUISE_SOURCES = ['apps/cli/src', 'apps/control-plane/src', 'apps/worker/src', 'packages'];

const tasks = {
  // Tests import sources (the "@anneal/source" condition); processes they spawn through the
  // `anneal` bin run the build, which is why it comes first.
  test: (extra) =>
    afterBuild(() =>
      withRedis((redisEnv) =>
        run(bin('turbo'), ['run', 'test', '--concurrency=1', ...extra], redisEnv),
      ),
    ),
  bench: (extra) =>
    afterBuild(() =>
      withRedis((redisEnv) =>
        run(bin('turbo'), ['run', 'bench', '--concurrency=1', ...extra], redisEnv),
      ),
    ),
  // The long variants of the reliability tests, then docs/reliability.md's figures table; the
  // same build and Redis as `test`.
  soak: (extra) =>
    afterBuild(() =>
      withRedis(async (redisEnv) => {
        const code = await run(
          bin('turbo'),
          ['run', 'soak', '--concurrency=1', ...extra],
          redisEnv,
        );
        return code === 0
          ? run(process.execPath, [path.join(root, 'scripts/reliability-report.mjs')])
          : code;
      }),
    ),
  demo: (extra) =>
    afterBuild(() =>
      withRedis((redisEnv) =>
        run(
          process.execPath,
          [path.join(root, 'apps/cli/bin/anneal.js'), 'demo', ...extra],
          redisEnv,
        ),
      ),
    ),
  lint: async (extra) => {
    for (const [cmd, args] of [
      [bin('prettier'), ['--check', '.']],
      [bin('eslint'), ['.', ...extra]],
      [bin('turbo'), ['run', 'typecheck']],
      // The dependency rules (.dependency-cruiser.cjs: import cycles, which workspace may import
      // which, folder rules inside the apps), then what the control plane loads at run time
      // (.dependency-cruiser.runtime.cjs, on the graph without type-only imports).
      ...['.dependency-cruiser.cjs', '.dependency-cruiser.runtime.cjs'].map((config) => [
        bin('depcruise'),
        ['--config', config, '--output-type', 'err', ...DEPCRUISE_SOURCES],
      ]),
    ]) {
      const code = await run(cmd, args);
      if (code !== 0) return code;
    }
    return 0;
  },
};

const [task, ...extra] = process.argv.slice(2);
if (!task || !(task in tasks)) {
  console.error(`usage: node scripts/run.mjs <${Object.keys(tasks).join('|')}> [args…]`);
  process.exit(2);
}
if (!(await ensurePrerequisites(task, env))) process.exit(1);
ensureDependencies();
process.exit(await tasks[task](extra));
