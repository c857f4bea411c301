// The rollout ledger's files under a run's artifact directory (docs/architecture.md "The rollout
// ledger"). One directory per step:
//
//   <runDir>/rollouts/step-000012/          committed: the rollouts of the step record Redis holds
//     index.json                            LedgerStepIndex: every rollout's sort keys + extents
//     sample.jsonl.br                       the groups kept for ever (the retention sample)
//     rest.jsonl.br                         the other groups; deleted once the step is pruned
//   <runDir>/rollouts/step-000012.a3/       written by attempt 3 before it commits the step
//   <runDir>/rollouts/step-000012.a3.g1/    the same after the run's first rollback (rollbacks 1)
//   <runDir>/rollouts/step-000012.a3.tmp/   being written
//   <runDir>/rollouts/step-000012.old/      a rolled-back copy being replaced
//
// A data file is a concatenation of Brotli streams, one per group (codec.ts), so a reader
// decompresses one group by its extent without reading the rest; with the operator's
// `ledger.compression: gzip` (and in every step written before 2026-12-07) the files are
// `sample.jsonl.gz` and `rest.jsonl.gz`, gzip members (one gzip file: `zcat` reads it whole).
import path from 'node:path';

export const LEDGER_DIR = 'rollouts';
export const INDEX_FILE = 'index.json';
export const SAMPLE_FILE = 'sample.jsonl.br';
export const REST_FILE = 'rest.jsonl.br';
/** The data files' names in steps written with gzip (codec.ts). */
export const GZIP_SAMPLE_FILE = 'sample.jsonl.gz';
export const GZIP_REST_FILE = 'rest.jsonl.gz';

export const ledgerDir = (runDir: string): string => path.join(runDir, LEDGER_DIR);

const stepName = (step: number): string => `step-${String(step).padStart(6, '0')}`;

/** The committed step's directory. */
export const stepDir = (runDir: string, step: number): string =>
  path.join(ledgerDir(runDir), stepName(step));

/** A copy of the step, written before its commit by attempt `attempt` after `rollbacks` rollbacks
 * (docs/guardrails.md "Rolled-back steps"; 0: no rollback yet; the name's `.g<n>`). */
export const copyDir = (runDir: string, step: number, attempt: number, rollbacks = 0): string =>
  `${stepDir(runDir, step)}.a${attempt}${rollbacks > 0 ? `.g${rollbacks}` : ''}`;

/** Who wrote a copy (and which step record it belongs to). */
export interface CopyOwner {
  attempt: number;
  rollbacks: number;
}

export type LedgerEntry =
  | { kind: 'committed'; step: number; name: string }
  | { kind: 'old'; step: number; name: string }
  | ({ kind: 'copy' | 'partial'; step: number; name: string } & CopyOwner);

/** What a name in the ledger directory is; null for anything else. */
export function parseEntry(name: string): LedgerEntry | null {
  const match = /^step-([0-9]{6,})(?:\.a([0-9]+)(?:\.g([0-9]+))?(\.tmp)?|(\.old))?$/.exec(name);
  if (!match) return null;
  const step = Number(match[1]);
  if (match[5]) return { kind: 'old', step, name };
  if (match[2] === undefined) return { kind: 'committed', step, name };
  const owner = { attempt: Number(match[2]), rollbacks: Number(match[3] ?? 0) };
  return { kind: match[4] ? 'partial' : 'copy', step, name, ...owner };
}
