import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { validateRunSpec } from '@anneal/protocol';
import { register } from '../commands/demo.ts';
import { controlSpec, demoSizes, evalSpec, grpoSpec } from './specs.ts';

/** The `demo` command as main.ts registers it, with its action replaced by a probe. */
function parseDemo(args: string[]): { flags: Record<string, unknown> | null; stderr: string } {
  const program = new Command('anneal').exitOverride();
  let stderr = '';
  program.configureOutput({ writeErr: (s) => (stderr += s), writeOut: () => {} });
  register(program);
  const demo = program.commands.find((c) => c.name() === 'demo')!;
  demo.exitOverride().configureOutput({ writeErr: (s) => (stderr += s), writeOut: () => {} });
  let flags: Record<string, unknown> | null = null;
  demo.action((f: Record<string, unknown>) => {
    flags = f;
  });
  try {
    program.parse(['demo', ...args], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
  }
  return { flags, stderr };
}

describe('anneal demo --max-policy-lag', () => {
  it('defaults to 0 and reaches the GRPO spec as rollout.maxPolicyLag', () => {
    expect(parseDemo([]).flags).toMatchObject({ maxPolicyLag: 0 });
    const { flags } = parseDemo(['--quick', '--max-policy-lag', '2']);
    expect(flags).toMatchObject({ maxPolicyLag: 2, quick: true });
    const sizes = demoSizes({
      seed: 0,
      stepsScale: 1,
      quick: true,
      maxPolicyLag: flags!.maxPolicyLag as number,
    });
    const spec = grpoSpec(sizes, 0, 'run_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'demo-rm');
    expect(spec.rollout).toMatchObject({ maxPolicyLag: 2 });
    // The spec the demo submits is one the control plane accepts, with the lag kept.
    const parsed = validateRunSpec(spec);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    expect(parsed.value.kind === 'grpo' && parsed.value.rollout.maxPolicyLag).toBe(2);
  });

  it('leaves the full demo on-policy unless asked', () => {
    const spec = grpoSpec(demoSizes({ seed: 0, stepsScale: 1, quick: false }), 0, 'r', undefined);
    expect(spec.rollout).toMatchObject({ maxPolicyLag: 0, groupSize: 8, promptsPerStep: 16 });
  });

  it.each(['5', '-1', '1.5', 'one', ''])('refuses %j, naming the flag', (bad) => {
    const { flags, stderr } = parseDemo(['--max-policy-lag', bad]);
    expect(flags).toBeNull();
    expect(stderr).toContain("option '--max-policy-lag <k>' argument");
    expect(stderr).toContain('must be an integer 0..4');
  });
});

describe('the control arm', () => {
  it("continues SFT from the SFT checkpoint for GRPO's steps, with a fresh optimizer", () => {
    const sizes = demoSizes({ seed: 0, stepsScale: 1, quick: false });
    const sft = 'run_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const parsed = validateRunSpec(controlSpec(sizes, 0, sft));
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    expect(parsed.value).toMatchObject({
      kind: 'sft',
      model: { checkpoint: { run: sft } },
      steps: sizes.grpo.steps,
      batchSize: sizes.sft.batchSize,
      optimizer: { learningRate: sizes.sft.learningRate },
    });
    // A fork loads the weights only unless asked: the control must not carry SFT's moments.
    expect(parsed.value.model?.checkpoint?.loadOptimizer).toBeUndefined();
    const runs = {
      sft,
      control: 'run_01ARZ3NDEKTSV4RRFFQ69G5FAW',
      grpo: 'run_01ARZ3NDEKTSV4RRFFQ69G5FAX',
    };
    const evaluation = validateRunSpec(evalSpec(sizes, 0, runs, 'demo-rm'));
    if (!evaluation.ok) throw new Error(JSON.stringify(evaluation.errors));
    expect(evaluation.value).toMatchObject({
      models: [runs.sft, runs.control, runs.grpo].map((run) => ({ checkpoint: { run } })),
      endpoints: { rewardModel: 'demo-rm' },
    });
  });
});
