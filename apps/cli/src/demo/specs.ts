// The run specs the demo submits (plain run-spec JSON, exactly what `anneal submit` takes), tuned
// for the embedded `tiny` model on 2 CPU cores. Why each number: docs/demo.md ("Tuning").
// `quick` is the CI-sized loop; `stepsScale` multiplies every step count; `maxPolicyLag` is the
// GRPO run's rollout.maxPolicyLag (docs/recipe.md "Pipelined GRPO").

/** Name the demo registers the rm run's model under (operator config `rewardModels`). */
export const DEMO_REWARD_MODEL = 'demo-rm';

export interface DemoSpecOptions {
  seed: number;
  /** Multiplies the step counts of sft, rm and grpo (at least 1 step each). */
  stepsScale: number;
  /** The short loop (CI): few steps, small groups, a smaller eval set. */
  quick: boolean;
  /** rollout.maxPolicyLag of the GRPO run: 0 on-policy, 1–4 pipelined (default 0). */
  maxPolicyLag?: number;
}

/** The bounds of rollout.maxPolicyLag in the GRPO run spec (docs/recipe.md "Pipelined GRPO"). */
export const MAX_POLICY_LAG = 4;

export interface DemoSizes {
  sft: { steps: number; batchSize: number; learningRate: number; checkpointInterval: number };
  rm: { steps: number; batchSize: number; learningRate: number; checkpointInterval: number };
  grpo: {
    steps: number;
    promptsPerStep: number;
    groupSize: number;
    maxTokens: number;
    learningRate: number;
    lambdaTool: number;
    checkpointInterval: number;
    /** rollout.maxPolicyLag (docs/recipe.md "Pipelined GRPO"). */
    maxPolicyLag: number;
  };
  /** `examples` is per dataset (search-qa holds the QA and the tool-free eval questions). */
  eval: {
    datasets: string[];
    examples: number;
    temperature: number;
    /** The headline budget (report before/after numbers), one of `budgets`. */
    maxToolCalls: number;
    /** The budget-forced sweep (docs/recipe.md §8.2); b = 0..5 is enough on 2 cores. */
    budgets: number[];
  };
}

/** The full demo: SFT to a competent-but-imperfect policy, then GRPO has room to improve it. */
export const FULL_SIZES: Readonly<DemoSizes> = {
  sft: { steps: 900, batchSize: 8, learningRate: 5e-3, checkpointInterval: 300 },
  rm: { steps: 40, batchSize: 16, learningRate: 1e-3, checkpointInterval: 20 },
  grpo: {
    steps: 80,
    promptsPerStep: 16,
    groupSize: 8,
    maxTokens: 64,
    learningRate: 3e-3,
    lambdaTool: 0.2,
    checkpointInterval: 40,
    maxPolicyLag: 0,
  },
  // All 300 questions of search-qa at each of 6 budgets: 1800 answers per checkpoint (the
  // single-budget eval took 1.5 s for 600).
  eval: {
    datasets: ['search-qa'],
    examples: 1000,
    temperature: 0.6,
    maxToolCalls: 5,
    budgets: [0, 1, 2, 3, 4, 5],
  },
};

/** The CI loop: every phase runs for real, at a size that finishes in a few minutes. */
export const QUICK_SIZES: Readonly<DemoSizes> = {
  sft: { steps: 24, batchSize: 4, learningRate: 5e-3, checkpointInterval: 12 },
  rm: { steps: 6, batchSize: 8, learningRate: 1e-3, checkpointInterval: 3 },
  grpo: {
    steps: 6,
    promptsPerStep: 2,
    groupSize: 4,
    maxTokens: 32,
    learningRate: 5e-3,
    lambdaTool: 0.2,
    checkpointInterval: 3,
    maxPolicyLag: 0,
  },
  eval: {
    datasets: ['search-qa', 'search-qa-tool-free'],
    examples: 4,
    temperature: 0.6,
    maxToolCalls: 5,
    budgets: [0, 1, 2, 3, 4, 5],
  },
};

const scaled = (steps: number, scale: number) => Math.max(1, Math.round(steps * scale));

export function demoSizes(options: DemoSpecOptions): DemoSizes {
  const base = options.quick ? QUICK_SIZES : FULL_SIZES;
  const s = options.stepsScale;
  return {
    sft: { ...base.sft, steps: scaled(base.sft.steps, s) },
    rm: { ...base.rm, steps: scaled(base.rm.steps, s) },
    grpo: {
      ...base.grpo,
      steps: scaled(base.grpo.steps, s),
      maxPolicyLag: options.maxPolicyLag ?? base.grpo.maxPolicyLag,
    },
    eval: { ...base.eval, datasets: [...base.eval.datasets], budgets: [...base.eval.budgets] },
  };
}

export type RunSpecJson = Record<string, unknown>;

export function sftSpec(sizes: DemoSizes, seed: number): RunSpecJson {
  const { steps, batchSize, learningRate, checkpointInterval } = sizes.sft;
  return {
    kind: 'sft',
    name: 'demo sft',
    labels: { demo: 'anneal' },
    seed,
    steps,
    batchSize,
    checkpointInterval,
    optimizer: { learningRate },
    // Mostly tool-use trajectories (the skill the eval measures), some style examples.
    data: {
      mix: [
        { source: 'tool-trajectories', weight: 0.9 },
        { source: 'style-preferences', weight: 0.1 },
      ],
    },
  };
}

export function rmSpec(sizes: DemoSizes, seed: number, sftRun: string): RunSpecJson {
  const { steps, batchSize, learningRate, checkpointInterval } = sizes.rm;
  return {
    kind: 'rm',
    name: 'demo reward model',
    labels: { demo: 'anneal' },
    seed,
    // The value head sits on the SFT backbone (docs/recipe.md §5).
    model: { checkpoint: { run: sftRun } },
    steps,
    batchSize,
    checkpointInterval,
    optimizer: { learningRate },
  };
}

export function grpoSpec(
  sizes: DemoSizes,
  seed: number,
  sftRun: string,
  rewardModel: string | undefined,
): RunSpecJson {
  const g = sizes.grpo;
  return {
    kind: 'grpo',
    name: 'demo grpo',
    labels: { demo: 'anneal' },
    seed,
    model: { checkpoint: { run: sftRun } },
    ...(rewardModel !== undefined && { endpoints: { rewardModel } }),
    steps: g.steps,
    checkpointInterval: g.checkpointInterval,
    optimizer: { learningRate: g.learningRate },
    rollout: {
      groupSize: g.groupSize,
      promptsPerStep: g.promptsPerStep,
      temperature: 1,
      maxTokens: g.maxTokens,
      maxPolicyLag: g.maxPolicyLag,
    },
    reward: { lambdaTool: g.lambdaTool },
  };
}

/** The same-compute control arm: SFT continued from the SFT checkpoint for as many steps as
 * GRPO takes, with the SFT data and learning rate and a fresh optimizer (a fork loads weights
 * only), so the eval can tell GRPO's effect from that of more training steps. */
export function controlSpec(sizes: DemoSizes, seed: number, sftRun: string): RunSpecJson {
  const { batchSize, learningRate } = sizes.sft;
  return {
    ...sftSpec(sizes, seed),
    name: 'demo control (sft continued)',
    model: { checkpoint: { run: sftRun } },
    steps: sizes.grpo.steps,
    batchSize,
    checkpointInterval: sizes.grpo.checkpointInterval,
    optimizer: { learningRate },
  };
}

/** The checkpoints the eval compares, in `models` order (checkpoint index 0, 1, 2). */
export interface EvalRuns {
  sft: string;
  control: string;
  grpo: string;
}

/** One eval run over the SFT, control and GRPO checkpoints and the budget sweep: same questions,
 * same sampling seeds (paired); one step per checkpoint × budget. With a reward model, each
 * answer gets its preference score. */
export function evalSpec(
  sizes: DemoSizes,
  seed: number,
  runs: EvalRuns,
  rewardModel?: string,
): RunSpecJson {
  return {
    kind: 'eval',
    name: 'demo eval (sft, control, grpo)',
    labels: { demo: 'anneal' },
    seed,
    models: [runs.sft, runs.control, runs.grpo].map((run) => ({ checkpoint: { run } })),
    ...(rewardModel !== undefined && { endpoints: { rewardModel } }),
    datasets: sizes.eval.datasets,
    examples: sizes.eval.examples,
    budgets: {
      toolCallBudgets: sizes.eval.budgets,
      // The tiny byte model learned from prompts without a budget statement; the tool still
      // refuses calls past b (docs/evaluation.md).
      statePrompt: false,
      maxToolCalls: sizes.eval.maxToolCalls,
      temperature: sizes.eval.temperature,
    },
  };
}
