#!/usr/bin/env node
// The `anneal` command. It runs the compiled CLI, dist/bundle/anneal.js (`npm run build`), so
// start-up is a plain node start. In a source checkout whose build is missing or older than one
// of the sources it was built from, it runs those sources through tsx instead (slower start; a
// note on a terminal): a stale build never runs by accident while you edit.
// Node built-ins only until the source fallback, which needs the tsx dev dependency.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const bundle = new URL('../dist/bundle/anneal.js', import.meta.url);
// a string, not a URL per source: `new URL` for each of ~500 sources was a third of the check
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Why the bundle cannot run (missing, or older than a source), or null when it can. */
function staleness() {
  if (!existsSync(bundle)) return 'not built';
  // An installed copy (the images) has dist/ and no sources: nothing to compare.
  if (!existsSync(new URL('../src/main.ts', import.meta.url))) return null;
  const built = statSync(bundle).mtimeMs;
  // The workspace sources esbuild put in the bundle (scripts/bundle-cli.mjs writes the list).
  let sources;
  try {
    sources = JSON.parse(readFileSync(new URL('../dist/bundle/sources.json', import.meta.url)));
  } catch {
    return 'missing its sources.json';
  }
  for (const source of sources) {
    const stat = statSync(repoRoot + source, { throwIfNoEntry: false });
    if (!stat) return `built from ${source}, which is gone`;
    if (stat.mtimeMs > built) return `older than ${source}`;
  }
  return null;
}

const reason = staleness();
if (reason === null) {
  await import(bundle.href);
} else if (process.env.ANNEAL_REQUIRE_BUILD === '1') {
  // Benchmarks and checks that must measure the build, never the source fallback.
  process.stderr.write(
    `anneal: dist/ is ${reason} and ANNEAL_REQUIRE_BUILD=1: run \`npm run build\`\n`,
  );
  process.exit(1);
} else {
  if (process.stderr.isTTY) {
    process.stderr.write(
      `anneal: dist/ is ${reason}; running the TypeScript sources through tsx (slow start). ` +
        '`npm run build` compiles them.\n',
    );
  }
  // Sources import each other through the "@anneal/source" export condition of every
  // workspace's package.json (the compiled default is what may be stale or missing).
  const { register } = await import('node:module');
  register(
    'data:text/javascript,export const resolve = (s, c, next) => ' +
      'next(s, { ...c, conditions: [...new Set(["@anneal/source", ...c.conditions])] });',
  );
  const tsx = await import('tsx/esm/api');
  tsx.register();
  await import('../src/main.ts');
}
