// The rules about what code is loaded at run time, on the graph without type-only imports (which
// TypeScript erases): the control plane reaches no engine runtime. The rest of the rules are in
// .dependency-cruiser.cjs, whose options this shares.
const { options } = require('./.dependency-cruiser.cjs');

/**
 * What the control plane loads at run time (checked on the graph without type-only imports, by
 * .dependency-cruiser.runtime.cjs: a type imported from @anneal/engines is erased and loads
 * nothing).
 */
const runtimeRules = [
  {
    name: 'control-plane-no-engines',
    comment:
      'The control plane reaches no engine runtime: no onnxruntime, no rollout loop, no vLLM or trainer client (only the archive download of @anneal/engines/archive).',
    severity: 'error',
    from: { path: '^apps/control-plane/src/' },
    to: {
      reachable: true,
      path: [
        '(^|/)node_modules/onnxruntime-node/',
        '^packages/envs/src/(rollout/loop\\.ts$|search/|tasks/|rubrics/judge\\.ts$)',
        '^packages/engines/src/(vllm|embedded|reward-model)/',
        '^packages/engines/src/tinker/(engine|session|transport)\\.ts$',
      ],
    },
  },
];

module.exports = {
  forbidden: runtimeRules,
  options: { ...options, tsPreCompilationDeps: false },
};
