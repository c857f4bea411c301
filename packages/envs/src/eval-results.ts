// `@anneal/envs/eval`: the eval results' statistics (curves, knees, cost frontier, prices) on
// their own, pure functions over step records, without the rollout loop, tools and engines
// behind the package root. The control plane renders results with them and may import nothing
// else of this package (.dependency-cruiser.cjs).
export * from './eval/stats.ts';
export * from './eval/results.ts';
