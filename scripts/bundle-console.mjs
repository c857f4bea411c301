#!/usr/bin/env node
// Bundles the web console (apps/control-plane/console/) into apps/control-plane/dist/console/:
// index.html and console.css copied, src/main.ts bundled by esbuild into one console.js for the
// browser (no framework; of the repo's packages only the @anneal/protocol functions it calls).
// The control plane serves that folder at /console (apps/control-plane/src/plugins/console.ts).
// Run by `npm run build` after tsc -b;
// tests call bundleConsole() with an outdir of their own, so they always serve the sources.
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = path.join(root, 'apps/control-plane/console');
const OUTDIR = path.join(root, 'apps/control-plane/dist/console');
const STATIC = ['index.html', 'console.css', 'favicon.svg'];

export async function bundleConsole({ outdir = OUTDIR } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: [path.join(SOURCE, 'src/main.ts')],
    outfile: path.join(outdir, 'console.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // @anneal/protocol from its sources, as the CLI bundle does; its package.json says it has no
    // side effects, so only what the console calls (decodeLogprobs) is bundled, no schema.
    conditions: ['@anneal/source'],
    // Browsers of the last few years: top-level await, private fields, optional chaining.
    target: ['chrome110', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  for (const name of STATIC) copyFileSync(path.join(SOURCE, name), path.join(outdir, name));
  return { outdir, bytes: statSync(path.join(outdir, 'console.js')).size };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
  const { outdir, bytes } = await bundleConsole(
    values.outdir === undefined ? {} : { outdir: path.resolve(values.outdir) },
  );
  console.error(`bundle-console: ${path.relative(root, outdir)}/console.js (${bytes} bytes)`);
}
