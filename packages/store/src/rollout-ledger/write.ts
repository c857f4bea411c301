// Writing one step of the rollout ledger (layout.ts): encoded and compressed group by group
// (codec.ts, on libuv's thread pool, the event loop free between groups), written into a
// temporary directory renamed to the attempt's own name, then — once Redis has the step record — renamed
// to the committed name. Each rename is atomic, so a reader or a resumed attempt sees a step
// whole or not at all.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  LEDGER_INDEX_VERSION,
  type LedgerGroupExtent,
  type LedgerStepIndex,
  type LedgerCompression,
  type RolloutIndexEntry,
  type RolloutRecord,
} from '@anneal/protocol';
import { LEDGER_CODECS } from './codec.ts';
import { INDEX_FILE, copyDir, stepDir, type CopyOwner } from './layout.ts';
import { readIndexIn } from './read.ts';

export interface LedgerStepInput {
  step: number;
  /** The attempt writing it (the run's attempt number, the store's fence). */
  attempt: number;
  /** Rollbacks the run had taken (the step record's `rollbacks`); default 0. */
  rollbacks?: number;
  policyVersion: number;
  groupSize: number;
  /** Records carry `tokens` (the spec's `ledger.tokens`). */
  hasTokens: boolean;
  /** Groups kept once the step leaves the keep-all window (the retention sample). */
  sample: readonly number[];
  /** Per group: its policy rollouts, then its reference rollouts. */
  groups: readonly (readonly RolloutRecord[])[];
  /** The data files' codec (codec.ts); default brotli. */
  compression?: LedgerCompression;
}

function indexEntry(r: RolloutRecord): RolloutIndexEntry {
  return {
    id: r.id,
    role: r.role,
    group: r.group,
    index: r.index,
    promptId: r.promptId,
    reward: r.rewards?.reward ?? null,
    advantage: r.advantage,
    ratio: r.ratio?.mean ?? null,
    length: r.lengths.generated,
    toolCalls: r.toolCalls,
    finish: r.finish,
  };
}

/** A group's records as UTF-8 lines, written into one buffer reused from group to group (no
 * joined string, no string-to-buffer copy inside the compressor: bench/overhead, 36 MiB a step
 * less). */
class LineBuffer {
  private buffer = Buffer.allocUnsafe(1 << 20);
  private length = 0;

  clear(): void {
    this.length = 0;
  }

  add(line: string): void {
    const most = line.length * 3 + 1; // UTF-8 bytes of a UTF-16 code unit: at most 3
    if (this.length + most > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + most));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.length += this.buffer.write(line, this.length, 'utf8');
    this.buffer[this.length] = 0x0a;
    this.length += 1;
  }

  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/** Writes the step as its writer's copy (copyDir); resolves once it is on disk. */
export async function writeLedgerStep(runDir: string, input: LedgerStepInput): Promise<void> {
  const sample = new Set(input.sample);
  const codec = LEDGER_CODECS[input.compression ?? 'brotli'];
  const { sampleFile, restFile } = codec;
  const files = { [sampleFile]: [] as Buffer[], [restFile]: [] as Buffer[] };
  const sizes = { [sampleFile]: 0, [restFile]: 0 };
  const extents: LedgerGroupExtent[] = [];
  const rollouts: RolloutIndexEntry[] = [];
  const lines = new LineBuffer();
  for (const [group, records] of input.groups.entries()) {
    lines.clear();
    for (const r of records) lines.add(JSON.stringify(r));
    // awaited before the buffer is refilled: the compressor reads it on libuv's thread pool
    const member = await codec.compress(lines.bytes());
    const file = sample.has(group) ? sampleFile : restFile;
    extents.push({ group, file, offset: sizes[file]!, length: member.length });
    files[file]!.push(member);
    sizes[file]! += member.length;
    for (const r of records) rollouts.push(indexEntry(r));
  }
  const index: LedgerStepIndex = {
    version: LEDGER_INDEX_VERSION,
    step: input.step,
    attempt: input.attempt,
    rollbacks: input.rollbacks ?? 0,
    policyVersion: input.policyVersion,
    groups: input.groups.length,
    groupSize: input.groupSize,
    hasTokens: input.hasTokens,
    pruned: false,
    kept: [...sample].filter((g) => g < input.groups.length).sort((a, b) => a - b),
    extents,
    rollouts,
  };
  const target = copyDir(runDir, input.step, input.attempt, input.rollbacks);
  const temp = `${target}.tmp`;
  await rm(temp, { recursive: true, force: true });
  try {
    await mkdir(temp, { recursive: true });
    // allSettled: every write has finished (or failed) before a failure removes the folder.
    const writes = await Promise.allSettled([
      writeFile(path.join(temp, sampleFile), Buffer.concat(files[sampleFile]!)),
      writeFile(path.join(temp, restFile), Buffer.concat(files[restFile]!)),
      writeFile(path.join(temp, INDEX_FILE), JSON.stringify(index)),
    ]);
    const failed = writes.find((w): w is PromiseRejectedResult => w.status === 'rejected');
    if (failed) throw failed.reason;
    await rm(target, { recursive: true, force: true });
    await rename(temp, target);
  } catch (error) {
    // A full disk (ENOSPC) or any other failure leaves no half-written copy behind: the partial
    // files would hold the space a retry needs and never be read.
    await rm(temp, { recursive: true, force: true }).catch(() => {});
    const cause = error as NodeJS.ErrnoException;
    throw Object.assign(
      new Error(`rollout ledger: writing step ${input.step} to ${temp}: ${cause.message}`, {
        cause,
      }),
      { code: cause.code },
    );
  }
}

async function committedRollbacks(dir: string): Promise<number | null> {
  return (await readIndexIn(dir))?.rollbacks ?? null;
}

/** After Redis committed the step for `owner`: its copy becomes the step's, replacing a copy of
 * fewer rollbacks (a rolled-back step run again). `exists`: the step was already
 * there (this copy is removed); `missing`: `owner` wrote no copy. */
export async function commitLedgerStep(
  runDir: string,
  step: number,
  owner: CopyOwner,
): Promise<'committed' | 'exists' | 'missing'> {
  const source = copyDir(runDir, step, owner.attempt, owner.rollbacks);
  const target = stepDir(runDir, step);
  const current = await committedRollbacks(target);
  if (current !== null && current >= owner.rollbacks) {
    await rm(source, { recursive: true, force: true });
    return 'exists';
  }
  if (current !== null) {
    // Rolled back: moved aside first (a reader briefly finds no step, never a mixed one).
    await rename(target, `${target}.old`);
  }
  try {
    await rename(source, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw error;
    // Another process promoted the same copy first (a resumed attempt's reconcile).
    return (await committedRollbacks(target)) === null ? 'missing' : 'exists';
  } finally {
    if (current !== null) await rm(`${target}.old`, { recursive: true, force: true });
  }
  return 'committed';
}

/** Removes `owner`'s copy of the step (its commit was refused or a duplicate). */
export async function discardLedgerStep(
  runDir: string,
  step: number,
  owner: CopyOwner,
): Promise<void> {
  await rm(copyDir(runDir, step, owner.attempt, owner.rollbacks), {
    recursive: true,
    force: true,
  });
}
