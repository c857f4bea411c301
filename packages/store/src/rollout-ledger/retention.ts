// Keeping the rollout ledger exactly once and bounded (docs/reliability.md "The rollout ledger
// across killed attempts", docs/operations.md "Rollout ledger"):
// a starting attempt reconciles the directory with the steps Redis holds, and steps that leave
// the keep-all window are pruned to their retention sample.
import { readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { LedgerStepIndex } from '@anneal/protocol';
import { LEDGER_CODECS } from './codec.ts';
import { INDEX_FILE, ledgerDir, parseEntry, stepDir } from './layout.ts';
import { readIndexIn } from './read.ts';

/** What Redis holds of a step: who committed it (attempt undefined: not recorded). */
export interface CommittedStep {
  attempt: number | undefined;
  rollbacks: number;
}

export interface ReconcileInput {
  /** The attempt starting now (every older attempt is fenced: it can commit nothing more). */
  attempt: number;
  /** Every step Redis holds (StepRecord attempt and rollbacks, absent rollbacks = 0). */
  committed: ReadonlyMap<number, CommittedStep>;
}

export interface ReconcileResult {
  /** Steps whose copy was committed in Redis but not renamed before its attempt ended. */
  promoted: number[];
  /** Names removed: copies of uncommitted steps and of steps another attempt committed, partial
   * writes, and committed directories of steps Redis no longer holds (rolled back, or lost). */
  removed: string[];
}

async function readIndex(dir: string): Promise<LedgerStepIndex> {
  const index = await readIndexIn(dir);
  if (!index) throw new Error(`rollout ledger: ${dir} has no ${INDEX_FILE}`);
  return index;
}

/** Makes the ledger hold exactly the steps Redis holds, each from the attempt that committed it
 * after as many rollbacks as its record says. */
export async function reconcileLedger(
  runDir: string,
  input: ReconcileInput,
): Promise<ReconcileResult> {
  const dir = ledgerDir(runDir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { promoted: [], removed: [] };
    throw error;
  }
  const entries = names.map(parseEntry).filter((e) => e !== null);
  const result: ReconcileResult = { promoted: [], removed: [] };
  const remove = async (name: string) => {
    await rm(path.join(dir, name), { recursive: true, force: true });
    result.removed.push(name);
  };
  const committedDirs = new Set<number>();
  for (const entry of entries) {
    if (entry.kind === 'old') await remove(entry.name); // a replacement cut short
    if (entry.kind !== 'committed') continue;
    const record = input.committed.get(entry.step);
    // Without a rollback a committed directory is the record's own; after one, its index says.
    const stale =
      record === undefined ||
      (record.rollbacks > 0 &&
        (await readIndex(path.join(dir, entry.name)).then(
          (index) => index.rollbacks !== record.rollbacks || index.attempt !== record.attempt,
        )));
    if (stale) await remove(entry.name);
    else committedDirs.add(entry.step);
  }
  for (const entry of entries) {
    if (entry.kind !== 'copy' && entry.kind !== 'partial') continue;
    if (entry.attempt >= input.attempt) continue; // this attempt's own, or a newer owner's
    const record = input.committed.get(entry.step);
    const isCommitted =
      entry.kind === 'copy' &&
      record?.attempt === entry.attempt &&
      record.rollbacks === entry.rollbacks;
    if (isCommitted && !committedDirs.has(entry.step)) {
      await rename(path.join(dir, entry.name), stepDir(runDir, entry.step));
      committedDirs.add(entry.step);
      result.promoted.push(entry.step);
    } else if (entry.kind === 'partial' || record === undefined || record.attempt !== undefined) {
      // A partial write, a step never committed (its attempt can no longer commit it), or
      // another writer's step; kept only where Redis does not say who committed the step.
      await remove(entry.name);
    }
  }
  return result;
}

const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

/** The step's rest file, whichever codec wrote it; null when there is none. */
async function restFileIn(dir: string): Promise<string | null> {
  for (const { restFile: name } of Object.values(LEDGER_CODECS)) {
    const file = path.join(dir, name);
    if (await exists(file)) return file;
  }
  return null;
}

/** Drops a committed step's groups outside its retention sample: the index is rewritten first
 * (temp + rename), then the rest file deleted, so a crash in between leaves a pruned index and
 * a file the next prune deletes. false: nothing to prune (already pruned, or no such step). */
export async function pruneLedgerStep(runDir: string, step: number): Promise<boolean> {
  const dir = stepDir(runDir, step);
  const rest = await restFileIn(dir);
  if (rest === null) return false;
  const indexFile = path.join(dir, INDEX_FILE);
  const index = await readIndex(dir);
  if (!index.pruned) {
    const kept = new Set(index.kept);
    const pruned: LedgerStepIndex = {
      ...index,
      pruned: true,
      extents: index.extents.filter((e) => kept.has(e.group)),
      rollouts: index.rollouts.filter((r) => kept.has(r.group)),
    };
    await writeFile(`${indexFile}.tmp`, JSON.stringify(pruned));
    await rename(`${indexFile}.tmp`, indexFile);
  }
  await rm(rest, { force: true });
  return true;
}

/** Prunes every committed step up to `throughStep` that still has its rest file. */
export async function pruneLedger(runDir: string, throughStep: number): Promise<number[]> {
  const pruned: number[] = [];
  let names: string[];
  try {
    names = await readdir(ledgerDir(runDir));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return pruned;
    throw error;
  }
  for (const entry of names.map(parseEntry)) {
    if (entry?.kind !== 'committed' || entry.step > throughStep) continue;
    if (await pruneLedgerStep(runDir, entry.step)) pruned.push(entry.step);
  }
  return pruned;
}
