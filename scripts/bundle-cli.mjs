#!/usr/bin/env node
// Bundles the `anneal` CLI into apps/cli/dist/bundle/ (run by `npm run build` after tsc -b).
// Why a bundle on top of tsc's dist/: `anneal --help` would otherwise load ~450 ES modules
// (TypeBox alone is ~250 files); one bundle with lazy chunks starts within a few node start-ups
// (bench/startup). Only the workspaces and the pure-JS ESM dependencies listed in INLINE are
// inlined; every other package stays an ordinary import from node_modules, so native addons
// (onnxruntime-node), packages reading files beside themselves (@fastify/swagger-ui) and ones
// spawning their own worker files (pino) behave exactly as under tsc's output.
//
// Engine worker threads: RpcWorker starts `worker-shim.mjs` and `<name>.worker.js` beside the
// module that creates them. The bundle is flat (chunks, entries and the shim in one folder),
// so every `*.worker.ts` of a workspace becomes an entry of the same name, and every `.mjs`
// source (the shim) is copied next to them.
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isBuiltin } from 'node:module';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI_OUTDIR = path.join(root, 'apps/cli/dist/bundle');

/** Dependencies inlined into the bundle: pure JavaScript that reads no files of its own. */
const INLINE = new Set([
  '@sinclair/typebox',
  'commander',
  'yaml',
  'minisearch',
  'p-retry',
  'is-network-error',
  '@huggingface/jinja',
]);

function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Files under every workspace's src/ whose name matches, skipping tests and testdata. */
function workspaceSources(match) {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'testdata' && entry.name !== 'node_modules') walk(full);
      } else if (match.test(entry.name) && !entry.name.endsWith('.test.ts')) found.push(full);
    }
  };
  for (const group of ['packages', 'apps']) {
    for (const ws of readdirSync(path.join(root, group))) {
      const src = path.join(root, group, ws, 'src');
      try {
        walk(src);
      } catch (err) {
        if (err.code !== 'ENOENT') throw err;
      }
    }
  }
  return found;
}

/** Flat names must not collide: two workers named alike would overwrite each other. */
function byBaseName(files, strip) {
  const named = {};
  for (const file of files) {
    const name = path.basename(file, strip);
    if (named[name])
      throw new Error(`bundle-cli: ${named[name]} and ${file} share the name ${name}`);
    named[name] = file;
  }
  return named;
}

/**
 * Every package the bundle leaves external must be found from the bundle's folder at run time
 * (node_modules of apps/cli or above): a dependency npm installed under another workspace only
 * would work from that workspace's dist/ and fail here.
 */
function assertExternalsResolve(metafile, outdir) {
  const names = new Set();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) {
      if (imported.external && !isBuiltin(imported.path)) {
        names.add(packageName(imported.path));
      }
    }
  }
  const missing = [...names].filter((name) => {
    for (let dir = outdir; ; dir = path.dirname(dir)) {
      if (existsSync(path.join(dir, 'node_modules', name, 'package.json'))) return false;
      if (dir === path.dirname(dir)) return true;
    }
  });
  if (missing.length > 0) {
    throw new Error(
      `bundle-cli: ${missing.join(', ')} cannot be found from ${path.relative(root, outdir)}; ` +
        'add them to apps/cli/package.json dependencies (or INLINE)',
    );
  }
}

/**
 * entry (repo-relative) becomes <outdir>/anneal.js. Other entries than the CLI's are for tests:
 * apps/cli/test/bundle-workers.test.ts bundles an engine smoke script the same way.
 */
export async function bundleCli({ entry = 'apps/cli/src/main.ts', outdir = CLI_OUTDIR } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const workers = byBaseName(workspaceSources(/\.worker\.ts$/), '.ts');
  const shims = byBaseName(workspaceSources(/\.mjs$/), '');
  const result = await esbuild.build({
    absWorkingDir: root,
    metafile: true,
    entryPoints: { anneal: entry, ...workers },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    sourcemap: 'linked',
    conditions: ['@anneal/source'],
    logLevel: 'warning',
    // Inlined CommonJS (commander) calls require() for node built-ins.
    banner: {
      js: "import { createRequire as __annealRequire } from 'node:module'; const require = __annealRequire(import.meta.url);",
    },
    plugins: [
      {
        name: 'anneal-externals',
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, ({ path: specifier }) => {
            if (isBuiltin(specifier)) return { external: true };
            const name = packageName(specifier);
            if (name.startsWith('@anneal/') || INLINE.has(name)) return undefined;
            return { external: true };
          });
        },
      },
    ],
  });
  for (const [name, file] of Object.entries(shims)) copyFileSync(file, path.join(outdir, name));
  assertExternalsResolve(result.metafile, outdir);
  // The workspace sources in the bundle, for the bin's staleness check (apps/cli/bin/anneal.js):
  // stat-ing exactly these is cheaper than walking every src/ on each start.
  const sources = [...Object.keys(result.metafile.inputs), ...Object.values(shims)]
    .map((file) => path.relative(root, path.resolve(root, file)))
    .filter((file) => !file.split(path.sep).includes('node_modules'))
    .sort();
  writeFileSync(path.join(outdir, 'sources.json'), `${JSON.stringify(sources, null, 1)}\n`);
  return { outdir, workers: Object.keys(workers), shims: Object.keys(shims) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { entry: { type: 'string' }, outdir: { type: 'string' } },
  });
  const { outdir, workers, shims } = await bundleCli({
    ...(values.entry !== undefined && { entry: values.entry }),
    ...(values.outdir !== undefined && { outdir: path.resolve(values.outdir) }),
  });
  console.error(
    `bundle-cli: ${path.relative(root, outdir)}/anneal.js (+ ${[...workers, ...shims].join(', ')})`,
  );
}
