// The rollout ledger's files under a run's artifact directory (docs/architecture.md "The rollout
// ledger"). One directory per step:
//
//   <runDir>/rollouts/step-000012/          committed: the rollouts of the step record Redis holds
//     index.json                            LedgerStepIndex: every rollout's sort keys + extents
//     sample.jsonl.gz                       the groups kept for ever (the retention sample)
//     rest.jsonl.gz                         the other groups; deleted once the step is pruned
//   <runDir>/rollouts/step-000012.a3/       written by attempt 3 before it commits the step
//   <runDir>/rollouts/step-000012.a3.tmp/   being written
//
// A data file is a concatenation of gzip members, one per group (a valid gzip file: `zcat` reads
// it whole), so a reader inflates one group by its extent without reading the rest.
import path from 'node:path';

export const LEDGER_DIR = 'rollouts';
export const INDEX_FILE = 'index.json';
export const SAMPLE_FILE = 'sample.jsonl.gz';
export const REST_FILE = 'rest.jsonl.gz';

export const ledgerDir = (runDir: string): string => path.join(runDir, LEDGER_DIR);

const stepName = (step: number): string => `step-${String(step).padStart(6, '0')}`;

/** The committed step's directory. */
export const stepDir = (runDir: string, step: number): string =>
  path.join(ledgerDir(runDir), stepName(step));

/** Attempt `attempt`'s copy of the step, written before its commit. */
export const attemptDir = (runDir: string, step: number, attempt: number): string =>
  `${stepDir(runDir, step)}.a${attempt}`;

export type LedgerEntry =
  | { kind: 'committed'; step: number; name: string }
  | { kind: 'attempt'; step: number; attempt: number; name: string }
  | { kind: 'partial'; step: number; attempt: number; name: string };

/** What a name in the ledger directory is; null for anything else. */
export function parseEntry(name: string): LedgerEntry | null {
  const match = /^step-([0-9]{6,})(?:\.a([0-9]+)(\.tmp)?)?$/.exec(name);
  if (!match) return null;
  const step = Number(match[1]);
  if (match[2] === undefined) return { kind: 'committed', step, name };
  const attempt = Number(match[2]);
  return { kind: match[3] ? 'partial' : 'attempt', step, attempt, name };
}
