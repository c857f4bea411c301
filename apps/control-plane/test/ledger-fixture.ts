// Rollout ledger fixtures for control-plane tests: records whose numbers vary by position (ties,
// nulls on the reference side, failed tool calls, missing answers), and a step written and
// committed the way the GRPO worker does it (@anneal/store's ledger writer, then Redis).
import { expect } from 'vitest';
import { type RolloutRecord, type RolloutRole, rolloutId } from '@anneal/protocol';
import {
  type StoreContext,
  appendStep,
  commitLedgerStep,
  runArtifactDir,
  writeLedgerStep,
} from '@anneal/store';

export const GROUPS = 3;
export const G = 2; // rollouts per group
const PROMPTS = ['p-capital', 'p-river', 'p-moon'];

/** A record whose numbers vary by position (some ties, some nulls: references). */
export function record(
  step: number,
  group: number,
  index: number,
  role: RolloutRole,
): RolloutRecord {
  const policy = role === 'policy';
  const k = step * 7 + group * 3 + index;
  const promptId = PROMPTS[(step + group) % 3]!; // p-river at step 1 and 2
  const failed = k % 4 === 0;
  const calls =
    k % 3 === 0
      ? []
      : [
          {
            name: 'search_web',
            arguments: { query: `query ${k}` },
            status: failed ? 'error' : 'ok',
            failed,
            resultCount: failed ? 0 : 3,
            result: failed ? '' : `result about ${promptId} number ${k}`,
            resultChars: failed ? 0 : 40,
            ...(failed && { error: 'backend timed out' }),
          },
        ];
  const reward = policy ? Math.round(((k % 5) - 2) * 25) / 100 : null;
  return {
    id: rolloutId(role, step, group, index),
    role,
    step,
    group,
    index,
    pairedWith: rolloutId(policy ? 'reference' : 'policy', step, group, index),
    policyVersion: policy ? step - 1 : null,
    promptId,
    source: 'qa-set',
    exampleId: promptId.slice(2),
    component: 'qa',
    prompt: { text: `Question about ${promptId}?` },
    turns: [{ assistant: `thinking ${k}`, calls }],
    answer: k % 6 === 5 ? null : `answer ${k}`,
    finish: k % 6 === 5 ? 'no_answer' : 'answer',
    truncated: false,
    lengths: { prompt: 12, generated: 10 + (k % 9), response: 30 + k, total: 42 + k },
    toolCalls: calls.length,
    toolErrors: failed && calls.length > 0 ? 1 : 0,
    rewards:
      reward === null
        ? null
        : {
            baseReward: reward > 0 ? 1 : 0,
            preferenceScore: 0.5,
            toolPenalty: 0,
            lengthPenalty: 0,
            efficiencyPenalty: 0,
            reward,
          },
    advantage: policy ? Math.round(((k % 7) - 3) * 10) / 10 : null,
    ratio: policy
      ? { mean: 1 + (k % 11) / 1000, min: 0.9, max: 1.1, k3: 0.0001, generated: 10 }
      : null,
    checks: null,
    tokens: {
      ids: [k, k + 1, k + 2],
      generated: [0, 1],
      samplerLogprobs: Buffer.from(new Float32Array([-0.5, -1.25]).buffer).toString('base64'),
    },
  };
}

export function groupsOf(step: number): RolloutRecord[][] {
  return Array.from({ length: GROUPS }, (_, g) => [
    ...Array.from({ length: G }, (_, i) => record(step, g, i, 'policy')),
    ...Array.from({ length: G }, (_, i) => record(step, g, i, 'reference')),
  ]);
}

/** Writes the step's ledger copy, commits it in Redis (unless `inRedis: false`: a step a rollback
 * took back) and promotes the copy, as the worker does. */
export async function commitStep(
  store: StoreContext,
  artifactDir: string,
  id: string,
  step: number,
  options: { inRedis?: boolean } = {},
): Promise<void> {
  const runDir = runArtifactDir(artifactDir, id);
  await writeLedgerStep(runDir, {
    step,
    attempt: 1,
    policyVersion: step - 1,
    groupSize: G,
    hasTokens: true,
    sample: [0],
    groups: groupsOf(step),
  });
  if (options.inRedis !== false) {
    const committed = await appendStep(store, id, step, { loss: 1 }, { attempt: 1 });
    expect(committed.status).toBe('committed');
  }
  expect(await commitLedgerStep(runDir, step, { attempt: 1, rollbacks: 0 })).toBe('committed');
}
