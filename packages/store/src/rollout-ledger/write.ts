// Writing one step of the rollout ledger (layout.ts): encoded and compressed group by group
// (gzip on libuv's thread pool, the event loop free between groups), written into a temporary
// directory renamed to the attempt's own name, then — once Redis has the step record — renamed
// to the committed name. Each rename is atomic, so a reader or a resumed attempt sees a step
// whole or not at all.
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import {
  LEDGER_INDEX_VERSION,
  type LedgerGroupExtent,
  type LedgerStepIndex,
  type RolloutIndexEntry,
  type RolloutRecord,
} from '@anneal/protocol';
import { INDEX_FILE, REST_FILE, SAMPLE_FILE, attemptDir, stepDir } from './layout.ts';

const gzipAsync = promisify(gzip);

/** zlib level 3: about as small as the default (6) on JSON lines, at a fraction of the CPU
 * (bench/overhead "Rollout ledger"). */
export const LEDGER_GZIP_LEVEL = 3;

export interface LedgerStepInput {
  step: number;
  /** The attempt writing it (the run's attempt number, the store's fence). */
  attempt: number;
  policyVersion: number;
  groupSize: number;
  tokens: boolean;
  /** Groups kept once the step leaves the keep-all window (the retention sample). */
  sample: readonly number[];
  /** Per group: its policy rollouts, then its reference rollouts. */
  groups: readonly (readonly RolloutRecord[])[];
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

/** Writes the step as attempt `attempt`'s copy (attemptDir); resolves once it is on disk. */
export async function writeLedgerStep(runDir: string, input: LedgerStepInput): Promise<void> {
  const sample = new Set(input.sample);
  const files = { [SAMPLE_FILE]: [] as Buffer[], [REST_FILE]: [] as Buffer[] };
  const sizes = { [SAMPLE_FILE]: 0, [REST_FILE]: 0 };
  const extents: LedgerGroupExtent[] = [];
  const rollouts: RolloutIndexEntry[] = [];
  for (const [group, records] of input.groups.entries()) {
    const lines = records.map((r) => JSON.stringify(r)).join('\n') + '\n';
    const member = await gzipAsync(lines, { level: LEDGER_GZIP_LEVEL });
    const file = sample.has(group) ? SAMPLE_FILE : REST_FILE;
    extents.push({ group, file, offset: sizes[file], length: member.length });
    files[file].push(member);
    sizes[file] += member.length;
    for (const r of records) rollouts.push(indexEntry(r));
  }
  const index: LedgerStepIndex = {
    version: LEDGER_INDEX_VERSION,
    step: input.step,
    attempt: input.attempt,
    policyVersion: input.policyVersion,
    groups: input.groups.length,
    groupSize: input.groupSize,
    tokens: input.tokens,
    pruned: false,
    kept: [...sample].filter((g) => g < input.groups.length).sort((a, b) => a - b),
    extents,
    rollouts,
  };
  const target = attemptDir(runDir, input.step, input.attempt);
  const temp = `${target}.tmp`;
  await rm(temp, { recursive: true, force: true });
  await mkdir(temp, { recursive: true });
  await Promise.all([
    writeFile(path.join(temp, SAMPLE_FILE), Buffer.concat(files[SAMPLE_FILE])),
    writeFile(path.join(temp, REST_FILE), Buffer.concat(files[REST_FILE])),
    writeFile(path.join(temp, INDEX_FILE), JSON.stringify(index)),
  ]);
  await rm(target, { recursive: true, force: true });
  await rename(temp, target);
}

const exists = (file: string) =>
  stat(file).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );

/** After Redis committed the step for `attempt`: its copy becomes the step's. `exists`: the step
 * was already there (its copy is removed); `missing`: this attempt wrote no copy. */
export async function commitLedgerStep(
  runDir: string,
  step: number,
  attempt: number,
): Promise<'committed' | 'exists' | 'missing'> {
  const source = attemptDir(runDir, step, attempt);
  const target = stepDir(runDir, step);
  if (await exists(target)) {
    await rm(source, { recursive: true, force: true });
    return 'exists';
  }
  try {
    await rename(source, target);
    return 'committed';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Another process promoted the same copy first (a resumed attempt's reconcile).
    if (code === 'ENOENT') return (await exists(target)) ? 'exists' : 'missing';
    if (code === 'EEXIST' || code === 'ENOTEMPTY') {
      await rm(source, { recursive: true, force: true });
      return 'exists';
    }
    throw error;
  }
}

/** Removes attempt `attempt`'s copy of the step (its commit was refused or a duplicate). */
export async function discardLedgerStep(
  runDir: string,
  step: number,
  attempt: number,
): Promise<void> {
  await rm(attemptDir(runDir, step, attempt), { recursive: true, force: true });
}
