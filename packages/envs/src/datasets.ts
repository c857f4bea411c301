// `@anneal/envs/datasets`: the dataset row schemas and JSONL validation on their own, without
// the rollout loop, tools and engines behind the package root. For callers that must load fast:
// the `anneal` CLI registers `anneal data validate` on every start, `--help` included.
export * from './data/schemas.ts';
export * from './data/jsonl.ts';
export * from './data/read-file.ts';
export * from './data/registered.ts';
