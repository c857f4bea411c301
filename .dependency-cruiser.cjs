// The dependency rules of the repository, checked by `npm run lint` (dependency-cruiser over the
// sources that ship: apps/*/src and packages/*/src, tests excluded). docs/architecture.md
// ("Packages and their dependencies") draws the graph these rules allow; each package's README
// says what it must not import. A rule broken fails the lint with the importing file, the
// imported file and the rule's comment.
//
// Imports are resolved as the type checker and vitest resolve them: `@anneal/*` through the
// `@anneal/source` export condition to the other workspace's src/, so a rule sees which file of
// which package is reached, and a narrow entry point (`@anneal/envs/eval`) is told apart from the
// package root.

/**
 * Which workspaces a workspace's sources may import (besides itself): tools/repo-checks/
 * dependency-graph.json, the one table behind these rules, docs/architecture.md's table and the
 * package.json dependencies (tools/repo-checks/src/dependency-graph.test.ts checks both). The
 * control plane schedules work, it does not do it: besides its three packages it reaches three
 * narrow, pure entry points only (the exceptions below).
 */
const { workspaces, entryPoints } = require('./tools/repo-checks/dependency-graph.json');
const escapeRe = (s) => s.replace(/[/.]/g, (c) => `\\${c}`);
const ALL = Object.keys(workspaces);
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

/** The source file an entry point (`@anneal/envs/eval`) names: its `@anneal/source` export. */
function entryFile(specifier) {
  const [, name, sub] = /^@anneal\/([^/]+)(?:\/(.+))?$/.exec(specifier);
  const dir = ALL.find((w) => w.endsWith(`/${name}`));
  const pkg = JSON.parse(readFileSync(join(__dirname, dir, 'package.json'), 'utf8'));
  const target = pkg.exports[sub ? `./${sub}` : '.']['@anneal/source'];
  return join(dir, target);
}

const workspaceRules = Object.entries(workspaces).map(([from, allowed]) => ({
  name: `workspace:${from}`,
  comment: `${from} may import only ${allowed.length ? allowed.join(', ') : 'no other workspace'} (see its README)`,
  severity: 'error',
  from: { path: `^${escapeRe(from)}/src/` },
  to: {
    path: `^(${ALL.filter((w) => w !== from && !allowed.includes(w))
      .map(escapeRe)
      .join('|')})/`,
    // A workspace's narrow entry points into packages it may not import whole.
    pathNot: (entryPoints[from] ?? []).map((e) => `^${escapeRe(entryFile(e))}$`),
  },
}));

const forbidden = [
  {
    name: 'no-circular',
    comment: 'An import cycle, through types alone or not, is still a cycle between modules.',
    severity: 'error',
    from: {},
    to: { circular: true },
  },
  ...workspaceRules,
  {
    name: 'workspace-internals',
    comment:
      'Another workspace is imported through its package name and entry points, never by a relative path into its src/.',
    severity: 'error',
    from: { path: '^(apps|packages)/([^/]+)/src/' },
    to: {
      path: '^(apps|packages)/([^/]+)/src/',
      pathNot: ['^$1/$2/src/'],
      dependencyTypesNot: ['aliased-subpath-import', 'npm', 'aliased-workspace'],
      dependencyTypes: ['local'],
    },
  },
  {
    name: 'executors-no-redis',
    comment:
      'Executors hold no Redis client, no BullMQ and nothing of the worker runtime (apps/worker/src/executors/README.md); the run files come from @anneal/store/files.',
    severity: 'error',
    from: { path: '^apps/worker/src/executors/' },
    to: {
      path: [
        '^apps/worker/src/(runtime|metrics)/',
        '^apps/worker/src/(worker|main|process-entry|env|config)\\.ts$',
        '^packages/store/src/(?!files\\.ts$|artifacts\\.ts$|rollout-ledger/)',
        '(^|/)node_modules/(bullmq|ioredis)/',
      ],
    },
  },
  {
    name: 'executors-resources-data-only',
    comment:
      "Executors take their resources from the ExecutorContext; of the worker's resources/ they import only the pure data catalogue.",
    severity: 'error',
    from: { path: '^apps/worker/src/executors/' },
    to: { path: '^apps/worker/src/resources/(?!data/)' },
  },
  {
    name: 'control-plane-routes-above-services',
    comment:
      'Routes and plugins call services, jobs and infra; none of those calls back up into a route or plugin.',
    severity: 'error',
    from: { path: '^apps/control-plane/src/(services|jobs|infra)/' },
    to: { path: '^apps/control-plane/src/(routes|plugins)/' },
  },
  {
    name: 'control-plane-services-start-no-jobs',
    comment:
      'Request logic (services/) never reaches into a background loop (jobs/): app.ts starts and stops those.',
    severity: 'error',
    from: { path: '^apps/control-plane/src/services/' },
    to: { path: '^apps/control-plane/src/jobs/' },
  },
  {
    name: 'control-plane-infra-at-the-bottom',
    comment:
      'Infrastructure (infra/: event hub, file cache, tar stream, paging) knows nothing of the request logic or loops above it.',
    severity: 'error',
    from: { path: '^apps/control-plane/src/infra/' },
    to: { path: '^apps/control-plane/src/(routes|plugins|services|jobs)/' },
  },
  {
    name: 'packages-no-apps',
    comment: 'Packages never import an app.',
    severity: 'error',
    from: { path: '^packages/' },
    to: { path: '^apps/' },
  },
  {
    name: 'no-test-code-in-src',
    comment: "Shipped code never imports test code (test doubles live in each workspace's test/).",
    severity: 'error',
    from: { path: '^(apps|packages)/[^/]+/src/' },
    to: { path: '(^|/)(test|testing)/|\\.test\\.ts$|^tools/testing/' },
  },
];

const options = {
  doNotFollow: { path: 'node_modules' },
  exclude: { path: '\\.test\\.ts$|/test/|/dist/' },
  // Type-only imports count: a cycle through types alone is still a cycle between modules.
  tsPreCompilationDeps: true,
  combinedDependencies: false,
  tsConfig: { fileName: 'tsconfig.base.json' },
  enhancedResolveOptions: {
    exportsFields: ['exports'],
    conditionNames: ['@anneal/source', 'import', 'require', 'node', 'default'],
    mainFields: ['module', 'main', 'types'],
    extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
  },
};

module.exports = { forbidden, options };
