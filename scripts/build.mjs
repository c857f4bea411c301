#!/usr/bin/env node
// `npm run build`: compiles every shipped workspace (packages/*, apps/*) to its dist/ with
// `tsc -b tsconfig.build.json` (JavaScript + declarations, incremental), then bundles the CLI
// (scripts/bundle-cli.mjs) and the web console (scripts/bundle-console.mjs). Before compiling it checks that each workspace's tsconfig.build.json
// references exactly the @anneal/* packages its package.json depends on: a missing reference
// would otherwise build against an old dist/ of that package, or in the wrong order. After
// compiling it removes dist/ outputs whose source is gone (tsc -b never deletes them), so a moved
// or deleted module is not shipped from an old build.
// Node built-ins and the repo's own dev dependencies (typescript, esbuild) only.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BUILD_CONFIG = 'tsconfig.build.json';

/** tsconfig files may carry comments: TypeScript's own parser reads them. */
function readTsconfig(file) {
  const { config, error } = ts.readConfigFile(file, ts.sys.readFile);
  if (error)
    throw new Error(`${file}: ${ts.flattenDiagnosticMessageText(error.messageText, '\n')}`);
  return config;
}

/** Workspaces that ship: every packages/* and apps/* folder with a tsconfig.build.json. */
export function shippedWorkspaces() {
  const found = new Map();
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(path.join(root, group))) {
      const dir = path.join(root, group, name);
      if (!existsSync(path.join(dir, BUILD_CONFIG))) continue;
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      found.set(manifest.name, dir);
    }
  }
  return found;
}

/** Every mismatch between package.json dependencies and tsconfig.build.json references. */
export function buildGraphProblems() {
  const workspaces = shippedWorkspaces();
  const problems = [];
  for (const [name, dir] of workspaces) {
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const wanted = Object.keys(manifest.dependencies ?? {})
      .filter((dep) => workspaces.has(dep))
      .map((dep) => path.join(workspaces.get(dep), BUILD_CONFIG));
    const config = readTsconfig(path.join(dir, BUILD_CONFIG));
    const have = (config.references ?? []).map((ref) =>
      path.resolve(dir, ref.path.endsWith('.json') ? ref.path : path.join(ref.path, BUILD_CONFIG)),
    );
    const rel = (file) => path.relative(dir, file);
    for (const file of wanted.filter((f) => !have.includes(f))) {
      problems.push(`${name}: ${BUILD_CONFIG} lacks the reference { "path": "${rel(file)}" }`);
    }
    for (const file of have.filter((f) => !wanted.includes(f))) {
      problems.push(`${name}: ${BUILD_CONFIG} references ${rel(file)}, not a dependency`);
    }
  }
  const solution = readTsconfig(path.join(root, BUILD_CONFIG));
  const listed = (solution.references ?? []).map((ref) => path.resolve(root, ref.path));
  for (const [name, dir] of workspaces) {
    if (!listed.includes(path.join(dir, BUILD_CONFIG))) {
      problems.push(`${BUILD_CONFIG} (root) does not list ${name}`);
    }
  }
  return problems;
}

const OUTPUT = /\.(d\.ts\.map|d\.ts|js\.map|js)$/;

/** Removes each dist/ output of `dir` (x.js, x.d.ts and their maps) whose src/x.ts is gone;
 * returns the removed paths. The CLI bundle (dist/bundle) and the web console (dist/console)
 * are esbuild's, not tsc's: left alone. */
export function removeStaleOutputs(dir) {
  const dist = path.join(dir, 'dist');
  if (!existsSync(dist)) return [];
  const removed = [];
  for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !OUTPUT.test(entry.name)) continue;
    const file = path.join(entry.parentPath, entry.name);
    const rel = path.relative(dist, file);
    if (rel.startsWith(`bundle${path.sep}`) || rel.startsWith(`console${path.sep}`)) continue;
    const source = path.join(dir, 'src', rel.replace(OUTPUT, '.ts'));
    if (!existsSync(source)) {
      rmSync(file);
      removed.push(path.relative(root, file));
    }
  }
  return removed;
}

function step(label, command, args) {
  console.error(`build: ${label}`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`build: ${label} failed`);
    process.exit(result.status ?? 1);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = buildGraphProblems();
  if (problems.length > 0) {
    console.error(
      `build: dependencies and project references disagree:\n  ${problems.join('\n  ')}`,
    );
    process.exit(1);
  }
  const bin = (name) => path.join(root, 'node_modules', '.bin', name);
  step(`tsc -b ${BUILD_CONFIG}`, bin('tsc'), ['-b', BUILD_CONFIG]);
  const stale = [...shippedWorkspaces().values()].flatMap(removeStaleOutputs);
  if (stale.length > 0) console.error(`build: removed ${stale.length} outputs of deleted sources`);
  step('bundle the CLI', process.execPath, [path.join(root, 'scripts/bundle-cli.mjs')]);
  step('bundle the console', process.execPath, [path.join(root, 'scripts/bundle-console.mjs')]);
}
