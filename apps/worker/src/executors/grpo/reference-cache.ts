// Step phase 3: reference rollouts from the frozen reference model (docs/recipe.md §4 "Decision"): one
// per policy rollout, paired by index, generated with the same tools and limits. The reference
// never changes, so its generations (and their reward-model scores) are cached per prompt
// across steps, and their seed depends only on the prompt: a resumed run regenerates the
// same ones. With caching off they are sampled again every step.
//
// Safe for concurrent steps (docs/recipe.md "Pipelined GRPO"): the cache holds each prompt's
// generation while it runs, so two batches that need one prompt share one generation (and one
// ReferenceGroup object, whose reward-model scores are then computed once). A generation that
// fails or is aborted leaves the cache, and the next step that needs the prompt samples it again.
import { runRollouts, type Rollout, type RolloutEnv } from '@anneal/envs';
import { samplingSeed } from '../common/sampling-seed.ts';
import type { StepPrompt } from './sample-prompts.ts';

export interface ReferenceGroup {
  rollouts: Rollout[];
  /** The step whose batch sampled them (a cached group is billed by that step only). */
  sampledAt: number;
  /** Reward-model scores s(x, y_ref) once computed (the scorer is frozen too). */
  scores?: Float32Array;
}

export class ReferenceCache {
  private readonly groups = new Map<string, Promise<ReferenceGroup>>();
  private hits = 0;
  private misses = 0;

  constructor(
    private readonly env: RolloutEnv,
    private readonly seed: number,
    private readonly enabled: boolean,
  ) {}

  /** The G reference rollouts of each prompt (same order as `prompts`). */
  async forPrompts(
    prompts: readonly StepPrompt[],
    groupSize: number,
    step: number,
    signal?: AbortSignal,
  ): Promise<ReferenceGroup[]> {
    const keyOf = (p: StepPrompt) => `${p.example.id}\u0000${groupSize}`;
    const missing = new Map<string, StepPrompt>();
    for (const p of prompts) {
      const cached = this.enabled ? this.groups.get(keyOf(p)) : undefined;
      if (cached) this.hits++;
      else if (!missing.has(keyOf(p))) missing.set(keyOf(p), p);
    }
    const fresh = [...missing.values()];
    this.misses += fresh.length;
    const generated = runRollouts(
      this.env,
      fresh.map((p) => ({
        prompt: p.tokens,
        n: groupSize,
        seed: samplingSeed(
          this.seed,
          this.enabled ? `reference:${p.example.id}` : `reference:${step}:${p.example.id}`,
        ),
      })),
      signal,
    );
    const local = new Map<string, Promise<ReferenceGroup>>();
    fresh.forEach((p, i) => {
      const group = generated.then((all) => ({ rollouts: all[i]!, sampledAt: step }));
      local.set(keyOf(p), group);
      if (this.enabled) {
        this.groups.set(keyOf(p), group);
        group.catch(() => {
          if (this.groups.get(keyOf(p)) === group) this.groups.delete(keyOf(p));
        });
      }
    });
    const source = this.enabled ? this.groups : local;
    const pending = prompts.map((p) => local.get(keyOf(p)) ?? source.get(keyOf(p))!);
    return Promise.all(pending);
  }

  stats(): { hits: number; misses: number; size: number } {
    return { hits: this.hits, misses: this.misses, size: this.groups.size };
  }
}
