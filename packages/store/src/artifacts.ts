// The artifact root's layout: shared storage that workers write (checkpoints, eval items, the
// rollout ledger) and the control plane reads. Both sides name a run's directory through this
// one function, so they cannot drift apart.
import path from 'node:path';

/** The root when ANNEAL_ARTIFACT_DIR is unset (resolved against the working directory). */
export const DEFAULT_ARTIFACT_DIR = '.anneal/artifacts';

/** `<root>/runs/<runId>/`: everything one run writes. The id must be one path segment (a run id
 * reaches here from a URL on the control plane; `..` or a slash would leave the root). */
export function runArtifactDir(root: string, runId: string): string {
  if (runId === '' || runId === '.' || runId === '..' || /[/\\\0]/.test(runId)) {
    throw new Error(`run id ${JSON.stringify(runId)} is not a single path segment`);
  }
  return path.join(root, 'runs', runId);
}

/** In a run's directory: an eval run's answers, one JSON line each (protocol `EvalItem`). */
export const EVAL_ITEMS_FILE = 'eval-items.jsonl';

/** `<root>/engines/<endpoint>/`: where an engine endpoint keeps its files (an embedded trainer's
 * checkpoints and sampler exports, `<model_id>/weights/<name>`, `<model_id>/sampler_weights/<name>`). */
export function engineArtifactDir(root: string, endpoint: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(endpoint)) {
    throw new Error(`endpoint name ${JSON.stringify(endpoint)} is not a single path segment`);
  }
  return path.join(root, 'engines', endpoint);
}
