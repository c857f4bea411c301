// @anneal/envs: tool-call format, search_web tool and backends, multi-turn rollouts, verifiers,
// rubric checks, JSONL datasets, prompt mix and the built-in tasks of the embedded demo.
export * from './format/toolCallFormat.ts';
export * from './search/types.ts';
export * from './search/limits.ts';
export * from './search/render.ts';
export * from './search/localCorpus.ts';
export * from './search/searxng.ts';
export * from './search/endpoints.ts';
export * from './search/searchWeb.ts';
export * from './rollout/types.ts';
export * from './rollout/parse.ts';
export { runRolloutGroup, runRollouts } from './rollout/loop.ts';
export type { RolloutEnv } from './rollout/loop.ts';
export * from './verify/normalize.ts';
export * from './verify/answer.ts';
export * from './rubrics/types.ts';
export * from './rubrics/language.ts';
export * from './rubrics/programmatic.ts';
export * from './rubrics/judge.ts';
export * from './rubrics/evaluate.ts';
export * from './chat/openaiChat.ts';
export * from './data/schemas.ts';
export * from './data/jsonl.ts';
export * from './data/mix.ts';
export * from './data/calibrate.ts';
export * from './data/tokens.ts';
export * from './random.ts';
