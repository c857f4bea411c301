#!/usr/bin/env node
// The `anneal` command. It runs the compiled CLI, dist/bundle/anneal.js (`npm run build`), so
// start-up is a plain node start. In a source checkout whose build is missing or older than a
// TypeScript source of the shipped workspaces, it runs those sources through tsx instead (slower
// start; a note on a terminal): a stale build never runs by accident while you edit.
// Node built-ins only until the source fallback, which needs the tsx dev dependency.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const bundle = new URL('../dist/bundle/anneal.js', import.meta.url);
const repoRoot = new URL('../../../', import.meta.url);

/** Newest mtime of the non-test TypeScript/JS sources under dir (0 when there are none). */
function newestSource(dir) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (entry.name !== 'testdata') newest = Math.max(newest, newestSource(full));
    } else if (/\.(ts|mts|mjs)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) {
      newest = Math.max(newest, statSync(full).mtimeMs);
    }
  }
  return newest;
}

/** Why the bundle cannot run (missing, or older than a source), or null when it can. */
function staleness() {
  if (!existsSync(bundle)) return 'not built';
  const built = statSync(bundle).mtimeMs;
  for (const group of ['packages', 'apps']) {
    const groupDir = fileURLToPath(new URL(group, repoRoot));
    let workspaces;
    try {
      workspaces = readdirSync(groupDir);
    } catch {
      continue; // an installed copy without the monorepo around it: nothing to compare
    }
    for (const ws of workspaces) {
      if (newestSource(`${groupDir}/${ws}/src`) > built) return `older than ${group}/${ws}/src`;
    }
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
