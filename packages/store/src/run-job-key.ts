// The run job's BullMQ hash key, in the two parts the progress scripts (progress-script.ts) put
// the run's pool between: apart from the Lua so that the scripts need no key helpers (context.ts
// imports the scripts).
import { poolQueueName } from '@anneal/protocol';
import { keys } from './context.ts';

/** The run job's key around its pool name (job id = run id; BullMQ names a job's hash
 * `<prefix>:<queue>:<jobId>`): the scripts put the run's pool between the two parts. */
export function runJobKeyParts(prefix: string, runId: string): [string, string] {
  const marker = '\u0000';
  const [head, tail] = poolQueueName(marker).split(marker);
  return [`${keys(prefix).bullPrefix()}:${head ?? ''}`, `${tail ?? ''}:${runId}`];
}
