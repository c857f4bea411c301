// Reading the rollout ledger (layout.ts), the one reader of its files (the control plane's
// rollout routes, the worker's reconcile and prune): the committed steps, a step's index (sort
// keys of every rollout kept), and records by group or id — one group's compressed bytes
// (codec.ts) decompressed per group read. Only committed step directories are read by id;
// attempt copies never are. A step pruned while it is read (the rest file deleted under an index
// read before) reads as absent, never as an error. Indexes and records are checked against their protocol schemas: a file written by
// another version fails naming the file and the field.
import { open, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  LedgerStepIndex,
  RolloutRecord,
  parseRolloutId,
  parseStored,
  upgradeLedgerIndex,
  upgradeRolloutRecord,
} from '@anneal/protocol';
import { decompressGroup } from './codec.ts';
import { INDEX_FILE, ledgerDir, parseEntry, stepDir } from './layout.ts';

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** Committed steps of the run's ledger, ascending (none: []). */
export async function listLedgerSteps(runDir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(ledgerDir(runDir));
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
  return names
    .map(parseEntry)
    .flatMap((e) => (e?.kind === 'committed' ? [e.step] : []))
    .sort((a, b) => a - b);
}

/** The committed step's index file. */
export const ledgerIndexFile = (runDir: string, step: number): string =>
  path.join(stepDir(runDir, step), INDEX_FILE);

/** An index file's contents, checked; `file` names it in errors. */
export function parseLedgerIndex(contents: string, file: string): LedgerStepIndex {
  return parseStored(LedgerStepIndex, contents, file, upgradeLedgerIndex);
}

/** The index of a step directory (committed or an attempt's copy); null when it has none. */
export async function readIndexIn(dir: string): Promise<LedgerStepIndex | null> {
  const file = path.join(dir, INDEX_FILE);
  try {
    return parseLedgerIndex(await readFile(file, 'utf8'), file);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

/** The step's index; null when the ledger has no such committed step. */
export function readLedgerIndex(runDir: string, step: number): Promise<LedgerStepIndex | null> {
  return readIndexIn(stepDir(runDir, step));
}

/** The records of one group (policy rollouts, then references); null when not kept. */
export async function readLedgerGroup(
  runDir: string,
  index: LedgerStepIndex,
  group: number,
): Promise<RolloutRecord[] | null> {
  const extent = index.extents.find((e) => e.group === group);
  if (!extent) return null;
  let member: Buffer;
  const name = path.join(stepDir(runDir, index.step), extent.file);
  try {
    const file = await open(name, 'r');
    try {
      member = Buffer.alloc(extent.length);
      const { bytesRead } = await file.read(member, 0, extent.length, extent.offset);
      if (bytesRead !== extent.length) return null;
    } finally {
      await file.close();
    }
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
  const source = `${name} group ${group}`;
  let text: string;
  try {
    text = (await decompressGroup(extent.file, member)).toString('utf8');
  } catch (error) {
    throw new Error(`rollout ledger: ${source}: ${(error as Error).message}`, { cause: error });
  }
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line, i) =>
      parseStored(RolloutRecord, line, () => `${source} record ${i + 1}`, upgradeRolloutRecord),
    );
}

/** One rollout by id (`<step>-<group>-<index>`, `<step>-<group>-r<index>`); null when absent. */
export async function readRollout(runDir: string, id: string): Promise<RolloutRecord | null> {
  const parsed = parseRolloutId(id);
  if (!parsed) return null;
  const index = await readLedgerIndex(runDir, parsed.step);
  if (!index) return null;
  const records = await readLedgerGroup(runDir, index, parsed.group);
  return records?.find((r) => r.id === id) ?? null;
}

/** Every kept record of a step, groups in order; null when the step is not in the ledger. */
export async function readLedgerStep(
  runDir: string,
  step: number,
): Promise<RolloutRecord[] | null> {
  const index = await readLedgerIndex(runDir, step);
  if (!index) return null;
  const groups = await Promise.all(
    index.extents.map((e) => readLedgerGroup(runDir, index, e.group)),
  );
  return groups.flatMap((g) => g ?? []);
}
