// A step an older worker wrote, before the recipe's vocabulary (docs/recipe.md "Renamed fields"):
// index version 1 (`tokens`, `generation`) and records with `rewards.base`, `rewards.preference`,
// `prompt.tokens`, `ratio.tokens`. The files below are what that worker's writer produced, byte
// for byte in shape; every reader returns them under the current names.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Value } from '@sinclair/typebox/value';
import { LedgerStepIndex, RolloutRecord } from '@anneal/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  INDEX_FILE,
  GZIP_REST_FILE,
  GZIP_SAMPLE_FILE,
  commitLedgerStep,
  pruneLedgerStep,
  readLedgerIndex,
  readLedgerStep,
  readRollout,
  reconcileLedger,
  stepDir,
} from './index.ts';

const oldPolicy = {
  id: '3-0-0',
  role: 'policy',
  step: 3,
  group: 0,
  index: 0,
  pairedWith: '3-0-r0',
  policyVersion: 2,
  promptId: 'p-0',
  source: 'search-qa',
  exampleId: 'q0',
  component: 'qa',
  prompt: { text: 'question', tokens: 7 },
  turns: [{ assistant: 'answer', calls: [] }],
  answer: 'x',
  finish: 'answer',
  truncated: false,
  lengths: { generated: 3, response: 3, total: 10 },
  toolCalls: 0,
  toolErrors: 0,
  rewards: {
    base: 1,
    preference: 0.75,
    toolPenalty: 0,
    lengthPenalty: 0.5,
    efficiencyPenalty: 0.05,
    reward: 0.7,
  },
  advantage: 0.25,
  ratio: { mean: 1, min: 0.9, max: 1.1, k3: 0.001, tokens: 3 },
  checks: null,
};
const oldReference = {
  ...oldPolicy,
  id: '3-0-r0',
  role: 'reference',
  pairedWith: '3-0-0',
  policyVersion: null,
  rewards: null,
  advantage: null,
  ratio: null,
};

async function writeOldStep(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const member = gzipSync(`${JSON.stringify(oldPolicy)}\n${JSON.stringify(oldReference)}\n`);
  // a version-1 step was written with gzip, under the `.gz` names
  await writeFile(path.join(dir, GZIP_SAMPLE_FILE), member);
  await writeFile(path.join(dir, GZIP_REST_FILE), Buffer.alloc(0));
  const index = {
    version: 1,
    step: 3,
    attempt: 2,
    generation: 1,
    policyVersion: 2,
    groups: 1,
    groupSize: 1,
    tokens: false,
    pruned: false,
    kept: [0],
    extents: [{ group: 0, file: GZIP_SAMPLE_FILE, offset: 0, length: member.length }],
    rollouts: [
      {
        id: '3-0-0',
        role: 'policy',
        group: 0,
        index: 0,
        promptId: 'p-0',
        reward: 0.7,
        advantage: 0.25,
        ratio: 1,
        length: 3,
        toolCalls: 0,
        finish: 'answer',
      },
    ],
  };
  await writeFile(path.join(dir, INDEX_FILE), JSON.stringify(index));
}

let runDir: string;
beforeEach(async () => {
  runDir = await mkdtemp(path.join(tmpdir(), 'anneal-ledger-old-'));
});
afterEach(async () => {
  await rm(runDir, { recursive: true, force: true });
});

describe('a step written by an older worker', () => {
  it('reads back under the current names: index, one rollout, the whole step', async () => {
    await writeOldStep(stepDir(runDir, 3));
    const index = await readLedgerIndex(runDir, 3);
    expect(Value.Check(LedgerStepIndex, index)).toBe(true);
    expect(index).toMatchObject({ version: 2, rollbacks: 1, hasTokens: false });
    expect(index).not.toHaveProperty('generation');
    expect(index).not.toHaveProperty('tokens');

    const policy = await readRollout(runDir, '3-0-0');
    expect(Value.Check(RolloutRecord, policy)).toBe(true);
    expect(policy!.rewards).toEqual({
      baseReward: 1,
      preferenceScore: 0.75,
      toolPenalty: 0,
      lengthPenalty: 0.5,
      efficiencyPenalty: 0.05,
      reward: 0.7,
    });
    expect(policy!.prompt).toEqual({ text: 'question' });
    expect(policy!.lengths).toEqual({ prompt: 7, generated: 3, response: 3, total: 10 });
    expect(policy!.ratio).toEqual({ mean: 1, min: 0.9, max: 1.1, k3: 0.001, generated: 3 });

    const step = await readLedgerStep(runDir, 3);
    expect(step!.map((r) => r.id)).toEqual(['3-0-0', '3-0-r0']);
    expect(step![1]!.rewards).toBeNull();
    expect(step![1]!.lengths.prompt).toBe(7);
    for (const r of step!) expect(Value.Check(RolloutRecord, r)).toBe(true);
  });

  it('keeps its rollback count through reconcile, a later commit and pruning', async () => {
    await writeOldStep(stepDir(runDir, 3));
    // Redis holds the step as committed by attempt 2 after one rollback: the copy is the step's.
    const committed = new Map([[3, { attempt: 2, rollbacks: 1 }]]);
    expect(await reconcileLedger(runDir, { attempt: 3, committed })).toEqual({
      promoted: [],
      removed: [],
    });
    // A copy of the same step from before that rollback does not replace it.
    await writeOldStep(`${stepDir(runDir, 3)}.a1`);
    expect(await commitLedgerStep(runDir, 3, { attempt: 1, rollbacks: 0 })).toBe('exists');
    expect(await pruneLedgerStep(runDir, 3)).toBe(true);
    const rewritten = JSON.parse(await readFile(path.join(stepDir(runDir, 3), INDEX_FILE), 'utf8'));
    expect(rewritten).toMatchObject({ version: 2, rollbacks: 1, hasTokens: false, pruned: true });
    expect(rewritten).not.toHaveProperty('generation');
  });
});
