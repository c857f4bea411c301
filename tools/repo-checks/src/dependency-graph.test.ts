// The allowed dependency graph has one source, dependency-graph.json: the lint's rules
// (.dependency-cruiser.cjs) are built from it, and this test keeps docs/architecture.md's table
// and every workspace's package.json from drifting away from it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './repo.ts';

interface Graph {
  workspaces: Record<string, string[]>;
  entryPoints: Record<string, string[]>;
}

const graph = JSON.parse(
  readFileSync(path.join(REPO_ROOT, 'tools/repo-checks/dependency-graph.json'), 'utf8'),
) as Graph;
const short = (workspace: string) => workspace.split('/')[1];
const readJson = (file: string) =>
  JSON.parse(readFileSync(path.join(REPO_ROOT, file), 'utf8')) as {
    name: string;
    dependencies?: Record<string, string>;
    exports?: Record<string, Record<string, string>>;
  };

/** `| \`envs\` | \`protocol\`, \`rl\` |` rows of the section's table → name → names. */
function dependencyTable(markdown: string): Map<string, string[]> {
  const start = markdown.indexOf('## Packages and their dependencies');
  const end = markdown.indexOf('\n## ', start + 1);
  const rows = new Map<string, string[]>();
  for (const line of markdown.slice(start, end).split('\n')) {
    const [, name, deps] = /^\| `([a-z-]+)`\s*\|(.*)\|$/.exec(line.trim()) ?? [];
    if (name === undefined || deps === undefined) continue;
    rows.set(
      name,
      [...deps.matchAll(/`([a-z-]+)`/g)].map((m) => m[1] ?? ''),
    );
  }
  return rows;
}

describe('the dependency graph', () => {
  it("is docs/architecture.md's table, row for row", () => {
    const table = dependencyTable(
      readFileSync(path.join(REPO_ROOT, 'docs/architecture.md'), 'utf8'),
    );
    const expected = new Map(
      Object.entries(graph.workspaces).map(([w, deps]) => [short(w), deps.map(short)]),
    );
    expect(Object.fromEntries([...table].map(([k, v]) => [k, [...v].sort()]))).toEqual(
      Object.fromEntries([...expected].map(([k, v]) => [k, [...v].sort()])),
    );
  });

  it("allows every @anneal/* dependency a workspace's package.json declares", () => {
    const problems: string[] = [];
    for (const [workspace, allowed] of Object.entries(graph.workspaces)) {
      const declared = Object.keys(readJson(`${workspace}/package.json`).dependencies ?? {}).filter(
        (d) => d.startsWith('@anneal/'),
      );
      const viaEntryPoints = (graph.entryPoints[workspace] ?? []).map((e) =>
        e.split('/').slice(0, 2).join('/'),
      );
      const names = new Set([
        ...allowed.map((w) => readJson(`${w}/package.json`).name),
        ...viaEntryPoints,
      ]);
      for (const dep of declared) {
        if (!names.has(dep)) problems.push(`${workspace}/package.json: ${dep} is not allowed`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('names entry points that packages export from their sources', () => {
    for (const entries of Object.values(graph.entryPoints)) {
      for (const entry of entries) {
        const [scope, name, ...sub] = entry.split('/');
        const workspace = Object.keys(graph.workspaces).find((w) => short(w) === name);
        expect(workspace, entry).toBeDefined();
        const exported = readJson(`${workspace}/package.json`).exports?.[`./${sub.join('/')}`];
        expect(exported?.['@anneal/source'], `${scope}/${name} exports ./${sub.join('/')}`).toMatch(
          /^\.\/src\/.+\.ts$/,
        );
      }
    }
  });
});
