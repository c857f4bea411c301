// Which datasets a run may name: the worker's built-in ones (the embedded demo tasks, names as
// in the run-spec defaults) and the operator's registered JSONL files (`datasets:`), each usable
// only by the kinds its row format feeds. Checked at submission so a typo is a 400, not a
// failed run.
import { type Issue, joinPointer } from './document.ts';
import type { DatasetFormat, OperatorConfig } from './operator-config.ts';
import type { RunSpec } from './run-spec/index.ts';

/** Built-in dataset names per run kind (the worker's builtin data catalogue serves exactly
 * these; a worker test keeps them equal). */
export const BUILTIN_DATASETS = {
  sft: ['builtin', 'tool-trajectories', 'style-preferences'],
  rm: ['builtin', 'preference-pairs'],
  grpo: ['search-qa', 'rubric-chat'],
  eval: ['builtin', 'search-qa', 'search-qa-tool-free'],
} as const satisfies Record<RunSpec['kind'], readonly string[]>;

/** Every built-in name (registered datasets may not reuse one). */
export const BUILTIN_DATASET_NAMES: readonly string[] = [
  ...new Set(Object.values(BUILTIN_DATASETS).flat()),
];

/** Row formats each kind reads (packages/envs DatasetRows). */
export const DATASET_KINDS_FOR_RUN: Readonly<Record<RunSpec['kind'], readonly DatasetFormat[]>> = {
  sft: ['sft'],
  rm: ['preference'],
  grpo: ['qa', 'rubric'],
  eval: ['qa'],
};

/** The dataset names a spec uses, with the JSON pointer of each. */
export function specDatasets(spec: RunSpec): { name: string; path: string }[] {
  if (spec.kind === 'eval') {
    return spec.datasets.map((name, i) => ({ name, path: joinPointer('datasets', i) }));
  }
  return spec.data.mix.map((entry, i) => ({
    name: entry.source,
    path: joinPointer('data', 'mix', i, 'source'),
  }));
}

/** Unknown dataset names, and registered datasets whose row format this kind cannot read. */
export function datasetIssues(spec: RunSpec, config: OperatorConfig): Issue[] {
  const builtin: readonly string[] = BUILTIN_DATASETS[spec.kind];
  const formats = DATASET_KINDS_FOR_RUN[spec.kind];
  const usable = Object.entries(config.datasets)
    .filter(([, entry]) => formats.includes(entry.kind))
    .map(([name]) => name);
  const issues: Issue[] = [];
  for (const { name, path } of specDatasets(spec)) {
    const registered = config.datasets[name];
    if (builtin.includes(name) || (registered && formats.includes(registered.kind))) continue;
    const known = [...builtin, ...usable].join(', ');
    issues.push({
      path,
      message: registered
        ? `dataset '${name}' holds ${registered.kind} rows; a ${spec.kind} run reads ${formats.join(' or ')} (usable: ${known})`
        : `unknown ${spec.kind} dataset '${name}' (built-in or registered: ${known})`,
    });
  }
  return issues;
}
