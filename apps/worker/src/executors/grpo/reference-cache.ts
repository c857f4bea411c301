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
//
// The cache holds at most `maxGroups` prompts' groups (the spec's `reference.cacheMaxGroups`),
// the least recently used leaving first: unbounded, a run over a large dataset kept every
// prompt's rollouts for its whole life (about 0.5 MiB a prompt of 16 × 4,096 tokens with their
// text), its worker's memory and every full collection's marking growing step after step. A
// prompt that left is sampled again when drawn again, with the same seed (the same rollouts
// where the sampler is deterministic).
//
// Runs that share a reference adapter (docs/operations.md "Shared references") share its
// generations too, where caching is on: the rollouts (never the reward-model scores, whose model
// is each run's own) go to the shared reference's cache in this process, keyed by the prompt's
// tokens, the group size and what else decides a rollout (sampling settings, tools). Their seed
// then depends on the reference and the prompt alone, not on the run's seed, so runs on other
// workers sample the same ones. A group another run sampled is billed by that run.
import { createHash } from 'node:crypto';
import { runRollouts, type Rollout, type RolloutEnv } from '@anneal/envs';
import { samplingSeed } from '../common/sampling-seed.ts';
import type { SharedReferenceRollouts } from '../types.ts';
import type { StepPrompt } from './sample-prompts.ts';

/** `sampledAt` of a group another run sampled (and billed). */
const SAMPLED_ELSEWHERE = -1;

export interface ReferenceGroup {
  rollouts: Rollout[];
  /** The step whose batch sampled them (a cached group is billed by that step only). */
  sampledAt: number;
  /** Reward-model scores s(x, y_ref) once computed (the scorer is frozen too). */
  scores?: Float32Array;
}

export class ReferenceCache {
  /** In use order: the least recently used first. */
  private readonly groups = new Map<string, Promise<ReferenceGroup>>();
  private hits = 0;
  private misses = 0;
  private evictions = 0;

  constructor(
    private readonly env: RolloutEnv,
    private readonly seed: number,
    private readonly enabled: boolean,
    private readonly shared?: SharedReferenceRollouts,
    /** The most prompts' groups held (the spec's `reference.cacheMaxGroups`); no bound when
     * left out. */
    private readonly maxGroups = Number.POSITIVE_INFINITY,
  ) {
    if (!(
      maxGroups === Number.POSITIVE_INFINITY ||
      (Number.isInteger(maxGroups) && maxGroups >= 1)
    )) {
      throw new RangeError(`reference cache: maxGroups must be an integer >= 1, got ${maxGroups}`);
    }
  }

  /** The G reference rollouts of each prompt (same order as `prompts`). */
  async forPrompts(
    prompts: readonly StepPrompt[],
    groupSize: number,
    step: number,
    signal?: AbortSignal,
  ): Promise<ReferenceGroup[]> {
    const keyOf = (p: StepPrompt) => `${p.example.id}\u0000${groupSize}`;
    const missing = new Map<string, StepPrompt>();
    const used = new Map<string, Promise<ReferenceGroup>>();
    for (const p of prompts) {
      const key = keyOf(p);
      const cached = this.enabled ? this.groups.get(key) : undefined;
      if (cached) {
        this.hits++;
        used.set(key, cached);
        // the most recently used now
        this.groups.delete(key);
        this.groups.set(key, cached);
      } else if (!missing.has(key)) {
        missing.set(key, p);
      }
    }
    const shared = this.enabled ? this.shared : undefined;
    const sharedKeyOf = (p: StepPrompt) =>
      createHash('sha256')
        .update(`${shared?.settings}\u0000${groupSize}\u0000${p.tokens.join(',')}`)
        .digest('hex');
    const elsewhere = new Map<string, Promise<Rollout[]>>();
    if (shared !== undefined) {
      for (const p of missing.values()) {
        const found = shared.groups.get(sharedKeyOf(p));
        if (found !== undefined) elsewhere.set(keyOf(p), found);
      }
    }
    const fresh = [...missing.values()].filter((p) => !elsewhere.has(keyOf(p)));
    this.misses += fresh.length;
    this.hits += elsewhere.size;
    const seedKey = (p: StepPrompt) =>
      shared !== undefined
        ? `reference:${sharedKeyOf(p)}`
        : this.enabled
          ? `reference:${p.example.id}`
          : `reference:${step}:${p.example.id}`;
    const request = (p: StepPrompt) => ({
      prompt: p.tokens,
      n: groupSize,
      seed: samplingSeed(shared?.seed ?? this.seed, seedKey(p)),
    });
    const generated = runRollouts(this.env, fresh.map(request), signal);
    const local = new Map<string, Promise<ReferenceGroup>>();
    for (const [key, found] of elsewhere) {
      // Sampled by another run; if that run's generation fails (it was cancelled), this run
      // samples the group itself rather than fail its step.
      const p = missing.get(key)!;
      const group = found.then(
        (rollouts) => ({ rollouts, sampledAt: SAMPLED_ELSEWHERE }),
        () =>
          runRollouts(this.env, [request(p)], signal).then((all) => ({
            rollouts: all[0]!,
            sampledAt: step,
          })),
      );
      local.set(key, group);
    }
    fresh.forEach((p, i) => {
      const rollouts = generated.then((all) => all[i]!);
      if (shared !== undefined) shareGroup(shared, sharedKeyOf(p), rollouts);
      local.set(
        keyOf(p),
        rollouts.then((r) => ({ rollouts: r, sampledAt: step })),
      );
    });
    for (const [key, group] of local) {
      if (!this.enabled) break;
      this.groups.set(key, group);
      group.catch(() => {
        if (this.groups.get(key) === group) this.groups.delete(key);
      });
    }
    // this batch's groups are held by `local` and `used` until it has them, whatever leaves
    while (this.groups.size > this.maxGroups) {
      this.groups.delete(this.groups.keys().next().value as string);
      this.evictions++;
    }
    const pending = prompts.map((p) => local.get(keyOf(p)) ?? used.get(keyOf(p))!);
    return Promise.all(pending);
  }

  stats(): { hits: number; misses: number; evictions: number; size: number } {
    return {
      hits: this.hits,
      misses: this.misses,
      evictions: this.evictions,
      size: this.groups.size,
    };
  }
}

/** Puts `rollouts` in the shared cache (the oldest entry leaves past `maxGroups`); a generation
 * that fails leaves it, so the next run that needs the prompt samples it again. */
function shareGroup(
  shared: SharedReferenceRollouts,
  key: string,
  rollouts: Promise<Rollout[]>,
): void {
  shared.groups.set(key, rollouts);
  while (shared.groups.size > shared.maxGroups) {
    const oldest = shared.groups.keys().next().value as string;
    shared.groups.delete(oldest);
  }
  rollouts.catch(() => {
    if (shared.groups.get(key) === rollouts) shared.groups.delete(key);
  });
}
