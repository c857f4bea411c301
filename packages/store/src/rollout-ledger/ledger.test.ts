import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { Value } from '@sinclair/typebox/value';
import { LedgerStepIndex, RolloutRecord, rolloutId } from '@anneal/protocol';
import type * as FsPromises from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  GZIP_REST_FILE,
  GZIP_SAMPLE_FILE,
  REST_FILE,
  SAMPLE_FILE,
  commitLedgerStep,
  discardLedgerStep,
  ledgerDir,
  listLedgerSteps,
  pruneLedger,
  readLedgerGroup,
  readLedgerIndex,
  readLedgerStep,
  readRollout,
  reconcileLedger,
  stepDir,
  writeLedgerStep,
  type LedgerStepInput,
} from './index.ts';

// A disk that fills while a step is written: the named file gets half its bytes, then the write
// fails as the kernel's would (ENOSPC). Every other write goes to the real fs.
const disk = vi.hoisted(() => ({ fullAt: null as string | null }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof FsPromises>();
  const writeFile: typeof fs.writeFile = async (file, data, options) => {
    if (disk.fullAt !== null && String(file).endsWith(disk.fullAt) && Buffer.isBuffer(data)) {
      await fs.writeFile(file, data.subarray(0, data.length >> 1), options);
      throw Object.assign(new Error(`ENOSPC: no space left on device, write`), {
        code: 'ENOSPC',
        errno: -28,
        syscall: 'write',
      });
    }
    return fs.writeFile(file, data, options);
  };
  return { ...fs, writeFile, default: { ...fs, writeFile } };
});

function record(step: number, group: number, index: number, reference = false): RolloutRecord {
  const role = reference ? 'reference' : 'policy';
  const other = reference ? 'policy' : 'reference';
  return {
    id: rolloutId(role, step, group, index),
    role,
    step,
    group,
    index,
    pairedWith: rolloutId(other, step, group, index),
    policyVersion: reference ? null : step - 1,
    promptId: `p-${group}`,
    source: 'search-qa',
    exampleId: `q${group}`,
    component: 'qa',
    prompt: { text: `question ${group}` },
    turns: [{ assistant: `answer ${step}.${group}.${index}`, calls: [] }],
    answer: 'x',
    finish: 'answer',
    truncated: false,
    lengths: { prompt: 7, generated: 3 + index, response: 3 + index, total: 10 + index },
    toolCalls: 0,
    toolErrors: 0,
    rewards: reference
      ? null
      : {
          baseReward: 1,
          preferenceScore: 1,
          toolPenalty: 0,
          lengthPenalty: 0,
          efficiencyPenalty: 0,
          reward: index,
        },
    advantage: reference ? null : index - 0.5,
    ratio: reference ? null : { mean: 1, min: 1, max: 1, k3: 0, generated: 3 + index },
    checks: null,
  };
}

function stepInput(step: number, attempt: number, groups = 3): LedgerStepInput {
  return {
    step,
    attempt,
    policyVersion: step - 1,
    groupSize: 2,
    hasTokens: false,
    sample: [1],
    groups: Array.from({ length: groups }, (_, g) => [
      record(step, g, 0),
      record(step, g, 1),
      record(step, g, 0, true),
      record(step, g, 1, true),
    ]),
  };
}

let runDir: string;
beforeEach(async () => {
  runDir = await mkdtemp(path.join(tmpdir(), 'anneal-ledger-'));
});
afterEach(async () => {
  disk.fullAt = null;
  await rm(runDir, { recursive: true, force: true });
});

describe('rollout ledger files', () => {
  it('lists a step only once committed, and reads it back by group and id', async () => {
    await writeLedgerStep(runDir, stepInput(4, 1));
    expect(await listLedgerSteps(runDir)).toEqual([]);
    expect(await readRollout(runDir, '4-2-1')).toBeNull();
    expect(await commitLedgerStep(runDir, 4, { attempt: 1, rollbacks: 0 })).toBe('committed');
    expect(await listLedgerSteps(runDir)).toEqual([4]);
    const index = await readLedgerIndex(runDir, 4);
    expect(Value.Check(LedgerStepIndex, index)).toBe(true);
    expect(index!.rollouts.map((r) => r.id)).toContain('4-2-r1');
    expect(await readRollout(runDir, '4-2-1')).toEqual(record(4, 2, 1));
    expect(await readRollout(runDir, '4-0-r0')).toEqual(record(4, 0, 0, true));
    const all = await readLedgerStep(runDir, 4);
    expect(all).toHaveLength(12);
    for (const r of all!) expect(Value.Check(RolloutRecord, r)).toBe(true);
    // each data file is one Brotli stream a group, back to back, each read alone by its extent
    const lines = (file: string) =>
      index!.extents
        .filter((e) => e.file === file)
        .map((e) => {
          const bytes = readFileSync(path.join(stepDir(runDir, 4), file));
          const member = bytes.subarray(e.offset, e.offset + e.length);
          return brotliDecompressSync(member).toString().trim().split('\n').length;
        });
    expect(lines(REST_FILE)).toEqual([4, 4]);
    expect(lines(SAMPLE_FILE)).toEqual([4]);
    for (const file of [REST_FILE, SAMPLE_FILE]) {
      // the extents tile the file: nothing else is in it
      let end = 0;
      for (const e of index!.extents.filter((x) => x.file === file)) {
        expect(e.offset).toBe(end);
        end += e.length;
      }
      expect(readFileSync(path.join(stepDir(runDir, 4), file)).length).toBe(end);
    }
  });

  it("with compression 'gzip' the data files are gzip files (zcat reads each whole), read and pruned alike", async () => {
    await writeLedgerStep(runDir, { ...stepInput(6, 1), compression: 'gzip' });
    await commitLedgerStep(runDir, 6, { attempt: 1, rollbacks: 0 });
    const dir = stepDir(runDir, 6);
    expect((await readdir(dir)).sort()).toEqual(['index.json', GZIP_REST_FILE, GZIP_SAMPLE_FILE]);
    // each data file is ordinary gzip (members concatenated): zcat reads it whole
    const rest = gunzipSync(readFileSync(path.join(dir, GZIP_REST_FILE)));
    expect(rest.toString().trim().split('\n')).toHaveLength(8);
    const sample = gunzipSync(readFileSync(path.join(dir, GZIP_SAMPLE_FILE)));
    expect(sample.toString().trim().split('\n')).toHaveLength(4);
    expect(await readRollout(runDir, '6-2-1')).toEqual(record(6, 2, 1));
    expect(await readLedgerStep(runDir, 6)).toHaveLength(12);
    expect(await pruneLedger(runDir, 6)).toEqual([6]);
    expect((await readdir(dir)).sort()).toEqual(['index.json', GZIP_SAMPLE_FILE]);
    expect(await readRollout(runDir, '6-2-1')).toBeNull();
    expect(await readRollout(runDir, '6-1-0')).toEqual(record(6, 1, 0));
  });

  it('a group whose bytes do not decompress fails naming its file and group', async () => {
    await writeLedgerStep(runDir, stepInput(7, 1));
    await commitLedgerStep(runDir, 7, { attempt: 1, rollbacks: 0 });
    const index = (await readLedgerIndex(runDir, 7))!;
    const extent = index.extents.find((e) => e.file === REST_FILE)!;
    const file = path.join(stepDir(runDir, 7), REST_FILE);
    const bytes = readFileSync(file);
    bytes.fill(0x41, extent.offset, extent.offset + extent.length);
    await writeFile(file, bytes);
    await expect(readLedgerGroup(runDir, index, extent.group)).rejects.toThrow(
      `rollout ledger: ${file} group ${extent.group}: `,
    );
  });

  it('an index or a record written by an older worker fails naming its file and field', async () => {
    await writeLedgerStep(runDir, stepInput(5, 1, 1));
    await commitLedgerStep(runDir, 5, { attempt: 1, rollbacks: 0 });
    const indexFile = path.join(stepDir(runDir, 5), 'index.json');
    const index = JSON.parse(await readFile(indexFile, 'utf8')) as Record<string, unknown>;
    // An older worker's records: one without the `extents` the reader seeks by, and a record
    // whose `lengths` were a number.
    const { extents, ...older } = index;
    await writeFile(indexFile, JSON.stringify(older));
    await expect(readLedgerIndex(runDir, 5)).rejects.toThrow(
      `stored record ${indexFile} field /extents: Expected required property`,
    );
    await writeFile(indexFile, JSON.stringify({ ...older, extents }));
    const good = (await readLedgerIndex(runDir, 5))!;
    const extent = good.extents[0]!;
    const mistyped = { ...record(5, 0, 0), lengths: 3 };
    const member = gzipSync(JSON.stringify(mistyped) + '\n');
    const file = path.join(stepDir(runDir, 5), 'old-worker.jsonl.gz');
    await writeFile(file, member);
    const moved = {
      ...good,
      extents: [{ ...extent, file: 'old-worker.jsonl.gz', offset: 0, length: member.length }],
    };
    await expect(readLedgerGroup(runDir, moved, extent.group)).rejects.toThrow(
      `stored record ${file} group ${extent.group} record 1 field /lengths`,
    );
  });

  it('a second commit of the step keeps the first copy', async () => {
    await writeLedgerStep(runDir, stepInput(1, 1));
    await commitLedgerStep(runDir, 1, { attempt: 1, rollbacks: 0 });
    const again = stepInput(1, 2);
    again.groups = [[{ ...record(1, 0, 0), answer: 'other' }]];
    await writeLedgerStep(runDir, again);
    expect(await commitLedgerStep(runDir, 1, { attempt: 2, rollbacks: 0 })).toBe('exists');
    expect((await readRollout(runDir, '1-0-0'))!.answer).toBe('x');
    expect((await readdir(ledgerDir(runDir))).sort()).toEqual(['step-000001']);
  });

  it('pruning keeps the sample groups only, and is idempotent', async () => {
    for (const step of [1, 2, 3]) {
      await writeLedgerStep(runDir, stepInput(step, 1));
      await commitLedgerStep(runDir, step, { attempt: 1, rollbacks: 0 });
    }
    expect(await pruneLedger(runDir, 2)).toEqual([1, 2]);
    expect(await pruneLedger(runDir, 2)).toEqual([]);
    const index = await readLedgerIndex(runDir, 1);
    expect(index!.pruned).toBe(true);
    expect(new Set(index!.rollouts.map((r) => r.group))).toEqual(new Set([1]));
    expect(await readRollout(runDir, '1-0-0')).toBeNull();
    expect(await readRollout(runDir, '1-1-0')).toEqual(record(1, 1, 0));
    expect(await readLedgerStep(runDir, 3)).toHaveLength(12);
  });

  it('reconcile: promotes the committing attempt, drops other and uncommitted copies', async () => {
    // step 1: committed by attempt 1, renamed; step 2: committed by attempt 1, killed before the
    // rename; step 3: written by attempt 1 and by attempt 2 (attempt 2 committed it, killed
    // before the rename); step 4: written by attempt 2, never committed; a partial write.
    await writeLedgerStep(runDir, stepInput(1, 1));
    await commitLedgerStep(runDir, 1, { attempt: 1, rollbacks: 0 });
    await writeLedgerStep(runDir, stepInput(2, 1));
    await writeLedgerStep(runDir, stepInput(3, 1));
    await writeLedgerStep(runDir, stepInput(3, 2));
    await writeLedgerStep(runDir, stepInput(4, 2));
    await writeLedgerStep(runDir, stepInput(5, 2));
    const partial = path.join(ledgerDir(runDir), 'step-000005.a2');
    await import('node:fs/promises').then((fs) => fs.rename(partial, `${partial}.tmp`));
    const result = await reconcileLedger(runDir, {
      attempt: 3,
      committed: new Map([
        [1, { attempt: 1, rollbacks: 0 }],
        [2, { attempt: 1, rollbacks: 0 }],
        [3, { attempt: 2, rollbacks: 0 }],
      ]),
    });
    expect(result.promoted.sort()).toEqual([2, 3]);
    expect(result.removed.sort()).toEqual([
      'step-000003.a1',
      'step-000004.a2',
      'step-000005.a2.tmp',
    ]);
    expect((await readdir(ledgerDir(runDir))).sort()).toEqual([
      'step-000001',
      'step-000002',
      'step-000003',
    ]);
    expect((await readLedgerIndex(runDir, 3))!.attempt).toBe(2);
  });

  it('reconcile leaves the current attempt alone and drops steps Redis no longer holds', async () => {
    await writeLedgerStep(runDir, stepInput(1, 1));
    await commitLedgerStep(runDir, 1, { attempt: 1, rollbacks: 0 });
    await writeLedgerStep(runDir, stepInput(2, 3));
    const result = await reconcileLedger(runDir, { attempt: 3, committed: new Map() });
    expect(result.removed).toEqual(['step-000001']);
    expect((await readdir(ledgerDir(runDir))).sort()).toEqual(['step-000002.a3']);
    await discardLedgerStep(runDir, 2, { attempt: 3, rollbacks: 0 });
    expect((await readdir(ledgerDir(runDir))).sort()).toEqual([]);
  });

  it('a step run again after a rollback replaces the rolled-back copy, now and on reconcile', async () => {
    await writeLedgerStep(runDir, stepInput(2, 1));
    await commitLedgerStep(runDir, 2, { attempt: 1, rollbacks: 0 });
    const again = { ...stepInput(2, 1), rollbacks: 1 };
    again.groups = [[{ ...record(2, 0, 0), answer: 'after rollback' }]];
    await writeLedgerStep(runDir, again);
    expect(await commitLedgerStep(runDir, 2, { attempt: 1, rollbacks: 1 })).toBe('committed');
    expect((await readRollout(runDir, '2-0-0'))!.answer).toBe('after rollback');
    expect((await readdir(ledgerDir(runDir))).sort()).toEqual(['step-000002']);
    // an older rollbacks's commit never replaces a newer one
    await writeLedgerStep(runDir, stepInput(2, 1));
    expect(await commitLedgerStep(runDir, 2, { attempt: 1, rollbacks: 0 })).toBe('exists');
    // killed between the rollback's re-run commit and the rename: the next attempt promotes it
    await writeLedgerStep(runDir, { ...stepInput(3, 1), rollbacks: 0 });
    await commitLedgerStep(runDir, 3, { attempt: 1, rollbacks: 0 });
    await writeLedgerStep(runDir, { ...stepInput(3, 1), rollbacks: 1 });
    const result = await reconcileLedger(runDir, {
      attempt: 2,
      committed: new Map([
        [2, { attempt: 1, rollbacks: 1 }],
        [3, { attempt: 1, rollbacks: 1 }],
      ]),
    });
    expect(result).toEqual({ promoted: [3], removed: ['step-000003'] });
    expect((await readLedgerIndex(runDir, 3))!.rollbacks).toBe(1);
  });

  it('a full disk while writing a step leaves no .tmp copy, and says which step', async () => {
    disk.fullAt = REST_FILE;
    const failed = writeLedgerStep(runDir, stepInput(4, 1, 24));
    await expect(failed).rejects.toMatchObject({
      code: 'ENOSPC',
      message: expect.stringMatching(/^rollout ledger: writing step 4 to .*\.tmp: ENOSPC/),
    });
    expect(await readdir(ledgerDir(runDir))).toEqual([]);
    expect(await listLedgerSteps(runDir)).toEqual([]);
    // Space again: the same step writes and commits whole.
    disk.fullAt = null;
    await writeLedgerStep(runDir, stepInput(4, 1, 24));
    expect(await commitLedgerStep(runDir, 4, { attempt: 1, rollbacks: 0 })).toBe('committed');
    expect(await listLedgerSteps(runDir)).toEqual([4]);
  });
});
