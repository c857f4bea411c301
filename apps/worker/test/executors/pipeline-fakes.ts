// Test doubles for pipelined GRPO (docs/recipe.md "Pipelined GRPO"): an inference engine whose
// logprob of every sampled token is a known function of the policy version it serves, and a
// trainer whose π_train logprob is a known function of the number of optimiser steps its
// weights have taken, so every IS ratio is exp(π(trained version) − μ(sampling version)) by hand.
// Every policy rollout is two turns (a search_web call, then an answer); the engine logs each
// request, checks that nothing is sampled from a released name, and records any release or
// export deletion of a version that a request still uses.
import {
  ByteTokenizer,
  type AdamParams,
  type Datum,
  type ForwardResult,
  type InferenceEngine,
  type LossFn,
  type OptimStepResult,
  type SampledSequence,
  type SampleRequest,
  type SamplerWeights,
  type TrainerEngine,
  type TrainerModel,
  type TokenIds,
} from '@anneal/engines';
import { validateRunSpec, type GrpoSpec } from '@anneal/protocol';
import { format } from './fakes.ts';
import type { RunResources } from '../../src/executors/types.ts';
import { samplingSeed } from '../../src/executors/common/sampling-seed.ts';

/** μ: the sampler's logprob of every token it samples with weights version v. */
export const mu = (version: number) => -0.5 - 0.1 * version;
/** π_train: the trainer's logprob of every target token with weights version w. */
export const pi = (version: number) => -0.45 - 0.1 * version;

export function grpoSpec(extra: Record<string, unknown> = {}): GrpoSpec {
  const parsed = validateRunSpec({
    kind: 'grpo',
    steps: 3,
    checkpointInterval: 2,
    ...extra,
    rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 64, ...(extra['rollout'] ?? {}) },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value as GrpoSpec;
}

const versionOfPath = (path: string): number => {
  const match = /@v(\d+)$/.exec(path);
  if (!match) throw new Error(`fake path without a version: ${path}`);
  return Number(match[1]);
};

export type EngineEvent =
  | { kind: 'sample'; name: string; step: number | null; turn: 1 | 2 }
  | { kind: 'load' | 'release'; name: string }
  | { kind: 'train'; at: 'start' | 'end'; step: number }
  /** A gradient-free forward / an optimiser step at the weights step `step` trains. */
  | { kind: 'forward' | 'optim'; step: number }
  | { kind: 'delete'; path: string };

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

export class VersionedInference implements InferenceEngine {
  readonly events: EngineEvent[] = [];
  /** Release or delete of a version while a request still used it, or a request on a name not served. */
  readonly violations: string[] = [];
  private readonly served = new Map<string, string>(); // name -> path
  private readonly inFlight = new Map<string, number>();
  private readonly seedSteps = new Map<number, number>();
  private readonly waiters: Array<{ ready: () => boolean; resolve: () => void }> = [];
  /** Throws on the first-turn request of this step's policy rollouts. */
  failStep: number | null = null;
  /** Awaited by every request before it samples (e.g. a simulated sampling latency). */
  beforeSample: (request: SampleRequest) => Promise<void> = () => Promise.resolve();

  constructor(
    seed: number,
    steps: number,
    private readonly options: {
      /** Hold the second turn of batch b's rollouts until version b − 1 is loaded. */
      holdSecondTurns?: boolean;
    } = {},
  ) {
    for (let s = 1; s <= steps; s++) {
      for (let g = 0; g < 64; g++) this.seedSteps.set(samplingSeed(seed, `rollout:${s}:${g}`), s);
    }
  }

  /** Policy version a served name samples with. */
  versionOf(name: string): number {
    const path = this.served.get(name);
    if (path === undefined) throw new Error(`'${name}' is not served`);
    return versionOfPath(path);
  }

  pathInUse(path: string): boolean {
    return [...this.inFlight].some(([name, n]) => n > 0 && this.served.get(name) === path);
  }

  async loadWeights(weights: SamplerWeights): Promise<void> {
    await tick();
    this.served.set(weights.name, weights.path);
    this.events.push({ kind: 'load', name: weights.name });
    this.wake();
  }

  async releaseWeights(name: string): Promise<void> {
    if ((this.inFlight.get(name) ?? 0) > 0) this.violations.push(`released ${name} while in use`);
    this.served.delete(name);
    this.events.push({ kind: 'release', name });
    await tick();
  }

  /** Steps (from the first-turn seed or the call text) of every policy request seen so far. */
  sampledSteps(): Set<number> {
    return new Set(
      this.events.flatMap((e) => (e.kind === 'sample' && e.step !== null ? [e.step] : [])),
    );
  }

  async sample(request: SampleRequest, signal?: AbortSignal): Promise<SampledSequence[]> {
    const name = request.model ?? '';
    const version = this.versionOf(name);
    const policy = name.includes('-policy');
    const secondTurn = request.prompt.includes(format.ids.resultEnd);
    const step = !policy
      ? null
      : secondTurn
        ? this.stepInCall(request.prompt)
        : (this.seedSteps.get(request.seed ?? -1) ?? null);
    if (policy && !secondTurn && step !== null && step === this.failStep) {
      throw new Error(`sampler failed on the batch of step ${step}`);
    }
    this.inFlight.set(name, (this.inFlight.get(name) ?? 0) + 1);
    try {
      if (secondTurn && step !== null && this.options.holdSecondTurns) {
        await this.until(() => [...this.served.values()].some((p) => versionOfPath(p) >= step - 1));
      }
      await this.beforeSample(request);
      // logged when sampled (after a hold), with the version the name serves now
      if (this.versionOf(name) !== version) this.violations.push(`${name} changed version`);
      this.events.push({ kind: 'sample', name, step, turn: secondTurn ? 2 : 1 });
      this.wake();
      await tick();
      if (signal?.aborted) throw new Error('aborted');
      if (!this.served.has(name)) this.violations.push(`sampled ${name} after its release`);
      const text =
        policy && !secondTurn
          ? [format.ids.callStart, ...format.tokenizer.encode(`q${step}`), format.ids.callEnd]
          : [format.ids.answer, ...format.tokenizer.encode('x'), format.ids.eos];
      return Array.from({ length: request.n }, () => ({
        tokens: text,
        logprobs: text.map(() => mu(version)),
        finishReason: 'stop' as const,
      }));
    } finally {
      this.inFlight.set(name, this.inFlight.get(name)! - 1);
    }
  }

  /** Requests still running (0 once a run has returned). */
  running(): number {
    return [...this.inFlight.values()].reduce((a, b) => a + b, 0);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** A trainer event: recorded, and `until` conditions checked again. */
  trainerEvent(event: EngineEvent): void {
    this.events.push(event);
    this.wake();
  }

  /** Resolves once `ready()` holds (checked at every load, request and trainer event). */
  until(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ ready, resolve }));
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) {
      if (w.ready()) w.resolve();
      else this.waiters.push(w);
    }
  }

  private stepInCall(prompt: TokenIds): number | null {
    const start = prompt.lastIndexOf(format.ids.callStart);
    const end = prompt.indexOf(format.ids.callEnd, start);
    const query = format.tokenizer.decode(prompt.slice(start + 1, end));
    const match = /^q(\d+)$/.exec(query);
    return match ? Number(match[1]) : null;
  }
}

/** π_train = pi(weights version) at every target with a sampling logprob; the weights version
 * is the optimiser steps taken (plus the loaded checkpoint's). */
export class VersionedTrainerModel implements TrainerModel {
  readonly id = 'fake-versioned';
  readonly forwardBackwardData: Datum[][] = [];
  readonly deleted: string[] = [];
  version = 0;
  /** Awaited at the start of each forward_backward (e.g. until the next batch is sampling). */
  beforeTrain: (step: number) => Promise<void> = () => Promise.resolve();

  constructor(private readonly inference: VersionedInference) {}

  private result(data: readonly Datum[]): ForwardResult {
    const logprobs = data.map((d) => {
      const infer = d.lossFnInputs['logprobs'];
      const out = new Float32Array(d.modelInput.length);
      for (let t = 0; t < out.length; t++) out[t] = infer?.[t] ? pi(this.version) : 0;
      return out;
    });
    return { logprobs, metrics: {} };
  }

  forward(data: readonly Datum[], _lossFn: LossFn): Promise<ForwardResult> {
    this.inference.trainerEvent({ kind: 'forward', step: this.version + 1 });
    return Promise.resolve(this.result(data));
  }

  async forwardBackward(data: readonly Datum[], _lossFn: LossFn): Promise<ForwardResult> {
    const step = this.version + 1;
    this.inference.events.push({ kind: 'train', at: 'start', step });
    await this.beforeTrain(step);
    this.forwardBackwardData.push([...data]);
    await tick();
    this.inference.events.push({ kind: 'train', at: 'end', step });
    return this.result(data);
  }

  optimStep(_params: AdamParams): Promise<OptimStepResult> {
    this.inference.trainerEvent({ kind: 'optim', step: this.version + 1 });
    this.version++;
    return Promise.resolve({ gradNorm: 1, metrics: {} });
  }

  saveWeights(name: string): Promise<string> {
    return Promise.resolve(`mem://ckpt/${name}@v${this.version}`);
  }

  loadWeights(path: string): Promise<void> {
    this.version = versionOfPath(path);
    return Promise.resolve();
  }

  saveWeightsForSampler(name: string): Promise<SamplerWeights> {
    return Promise.resolve({ name, path: `mem://sampler/${name}@v${this.version}` });
  }

  deleteSamplerWeights(path: string): Promise<boolean> {
    this.inference.events.push({ kind: 'delete', path });
    if (this.inference.pathInUse(path)) this.inference.violations.push(`deleted ${path} in use`);
    this.deleted.push(path);
    return Promise.resolve(true);
  }
}

/** Resources of a GRPO run on the fakes (built-in data catalogue and search corpus). */
export function fakeResources(
  inference: VersionedInference,
  model: VersionedTrainerModel,
): RunResources {
  let created = 0;
  const trainer: TrainerEngine = {
    capabilities: { kinds: ['grpo'], losses: ['importance_sampling'], reduction: 'sum' },
    // the policy first; a resumed run opens a second model at the starting weights (reference)
    createModel: () =>
      Promise.resolve(created++ === 0 ? model : new VersionedTrainerModel(inference)),
    close: () => Promise.resolve(),
  };
  return {
    tokenizer: new ByteTokenizer(),
    inference,
    trainer,
    model: { label: 'base', baseModel: 'fake', checkpoint: null },
  };
}
