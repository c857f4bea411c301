// Which policy versions the inference engine serves during a GRPO run (docs/recipe.md
// "Pipelined GRPO"). Version v is the policy after step v (v = 0: the starting weights). A batch
// of rollouts pins the version current at its launch for all its turns, so a rollout never mixes
// two versions; a version that is neither current nor pinned is released: its serving name
// unloaded from the engine (InferenceEngine.releaseWeights, where the engine has it) and its
// sampler export deleted on the trainer (deleteSamplerWeights, where the backend can), so a run
// keeps only the exports still in use. The reference export the policy may start from is never
// deleted. Both are best effort: a failed release leaves memory or a file behind and never
// fails a step.
//
// With lag 0 every version is served under the run's one stable policy name (the engine
// versions it, docs/engines.md "Weight sync"): nothing is released by name, and each replaced
// export is deleted once the next one is served, as before pipelining.
//
// The owner of a run's policy versions (docs/architecture.md "One GRPO step"): served-weights.ts
// (the run's ledger of loaded names, released at run end) and the vLLM client's weight-sync.ts
// (adapter versions per replica) are views that follow this class's load and release calls.
import type { InferenceEngine, TrainerModel } from '@anneal/engines';

export interface ServedVersion {
  version: number;
  /** Serving name requests for this version send as `model`. */
  name: string;
  /** Sampler export it is served from. */
  path: string;
  /** Whether `path` is a policy export of this run (deletable), not the reference export. */
  policyExport: boolean;
}

interface Entry extends ServedVersion {
  pins: number;
}

export interface PolicyVersionsDeps {
  inference: Pick<InferenceEngine, 'releaseWeights'>;
  model: Pick<TrainerModel, 'deleteSamplerWeights'>;
}

export class PolicyVersions {
  private readonly entries = new Map<number, Entry>();
  private currentVersion: number;

  constructor(
    private readonly deps: PolicyVersionsDeps,
    initial: ServedVersion,
  ) {
    this.entries.set(initial.version, { ...initial, pins: 0 });
    this.currentVersion = initial.version;
  }

  get current(): ServedVersion {
    return this.entries.get(this.currentVersion)!;
  }

  /** Versions still served (current or pinned), oldest first. */
  served(): number[] {
    return [...this.entries.keys()].sort((a, b) => a - b);
  }

  /** Pins the current version until `unpin`: its name stays served and its export is kept. */
  pin(): ServedVersion {
    const entry = this.entries.get(this.currentVersion)!;
    entry.pins++;
    return { ...entry };
  }

  async unpin(version: number): Promise<void> {
    const entry = this.entries.get(version);
    if (entry === undefined || entry.pins === 0) {
      throw new Error(`policy version ${version} is not pinned`);
    }
    entry.pins--;
    await this.releaseStale();
  }

  /** `next` is loaded into the inference engine: it becomes current, and every older version
   * no batch pins any more is released. */
  async adopt(next: ServedVersion): Promise<void> {
    if (this.entries.has(next.version)) {
      throw new Error(`policy version ${next.version} is already served`);
    }
    this.entries.set(next.version, { ...next, pins: 0 });
    this.currentVersion = next.version;
    await this.releaseStale();
  }

  /** Releases every version, the current one too (a guardrail rollback serves the restored
   * checkpoint's weights instead, grpo/restore.ts); only when no batch pins one. */
  async releaseAll(): Promise<void> {
    const pinned = [...this.entries.values()].filter((e) => e.pins > 0);
    if (pinned.length > 0) {
      throw new Error(`policy versions ${pinned.map((e) => e.version).join(', ')} are pinned`);
    }
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(
      all.map(async (e) => {
        await this.deps.inference.releaseWeights?.(e.name).catch(() => undefined);
        if (e.policyExport && this.deps.model.deleteSamplerWeights) {
          await this.deps.model.deleteSamplerWeights(e.path).catch(() => false);
        }
      }),
    );
  }

  private async releaseStale(): Promise<void> {
    const current = this.current;
    const stale = [...this.entries.values()].filter(
      (e) => e.version !== current.version && e.pins === 0,
    );
    // Off the books before the first await: a concurrent call never releases one twice.
    for (const e of stale) this.entries.delete(e.version);
    const stillUsed = (path: string) => [...this.entries.values()].some((e) => e.path === path);
    await Promise.all(
      stale.map(async (e) => {
        if (e.name !== current.name) {
          await this.deps.inference.releaseWeights?.(e.name).catch(() => undefined);
        }
        if (e.policyExport && !stillUsed(e.path) && this.deps.model.deleteSamplerWeights) {
          await this.deps.model.deleteSamplerWeights(e.path).catch(() => false);
        }
      }),
    );
  }
}
