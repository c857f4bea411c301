// Test doubles for the executors' unit tests: hand-built rollouts, a scripted inference
// engine, an in-memory ExecutorContext (the store is tested elsewhere) and a trainer model
// whose logprobs are a fixed function of the sampler's, so every number is hand-checkable.
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
  type TrainerModel,
} from '@anneal/engines';
import { createToolCallFormat, type Rollout, type ToolCallFormat } from '@anneal/envs';
import type { RunKind, RunSpec } from '@anneal/protocol';
import type { ExecutorContext, RunResources, SpecOf } from '../../src/executors/types.ts';

export const format: ToolCallFormat = createToolCallFormat(new ByteTokenizer());

/** A rollout: prompt tokens, then segments that are generated (mask 1) or tool output (0). */
export function rollout(
  prompt: readonly number[],
  segments: ReadonlyArray<{ tokens: readonly number[]; generated: boolean; logprob?: number }>,
  extra: Partial<Rollout> = {},
): Rollout {
  const tokens = [...prompt];
  const lossMask = prompt.map(() => 0);
  const logprobs = prompt.map(() => 0);
  for (const s of segments) {
    tokens.push(...s.tokens);
    lossMask.push(...s.tokens.map(() => (s.generated ? 1 : 0)));
    logprobs.push(...s.tokens.map(() => (s.generated ? (s.logprob ?? -1) : 0)));
  }
  return {
    tokens: Int32Array.from(tokens),
    promptLength: prompt.length,
    lossMask: Uint8Array.from(lossMask),
    logprobs: Float32Array.from(logprobs),
    generatedTokens: lossMask.reduce((a, m) => a + m, 0),
    toolCalls: 0,
    toolErrors: 0,
    refusedCalls: 0,
    calls: [],
    answer: null,
    finish: 'answer',
    truncated: false,
    ...extra,
  };
}

/** Answers every request with `<|answer|>{text}<|eos|>`; counts requests. */
export class ScriptedInference implements InferenceEngine {
  readonly requests: SampleRequest[] = [];
  readonly loaded: SamplerWeights[] = [];
  constructor(private readonly text: (request: SampleRequest, k: number) => string) {}

  sample(request: SampleRequest): Promise<SampledSequence[]> {
    this.requests.push(request);
    return Promise.resolve(
      Array.from({ length: request.n }, (_, k) => {
        const tokens = [
          format.ids.answer,
          ...format.tokenizer.encode(this.text(request, k)),
          format.ids.eos,
        ];
        return { tokens, logprobs: tokens.map(() => -0.5), finishReason: 'stop' as const };
      }),
    );
  }

  loadWeights(weights: SamplerWeights): Promise<void> {
    this.loaded.push(weights);
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The datums as a trainer read them during its call: a datum's arrays are the caller's only
 * until the call returns (the GRPO step's are views of its step buffers, reused afterwards). */
function snapshot(data: readonly Datum[]): Datum[] {
  return data.map((d) => ({
    modelInput: [...d.modelInput],
    lossFnInputs: Object.fromEntries(
      Object.entries(d.lossFnInputs).map(([name, values]) => [name, values.slice()]),
    ),
  }));
}

/** π_train = μ_infer + shift at every target whose `logprobs` input is nonzero. */
export class ShiftedTrainerModel implements TrainerModel {
  readonly id = 'fake-model';
  readonly calls: Array<{
    kind: 'forward' | 'forwardBackward';
    data: readonly Datum[];
    lossFn: LossFn;
  }> = [];
  readonly saved: string[] = [];
  optimSteps = 0;

  constructor(
    private readonly shift: number,
    private readonly gradNorm: number | null = 1.5,
  ) {}

  private result(data: readonly Datum[]): ForwardResult {
    const logprobs = data.map((d) => {
      const infer = d.lossFnInputs['logprobs'];
      const out = new Float32Array(d.modelInput.length);
      for (let t = 0; t < out.length; t++) out[t] = (infer?.[t] ?? 0) + this.shift;
      return out;
    });
    return { logprobs, metrics: {} };
  }

  forward(data: readonly Datum[], lossFn: LossFn): Promise<ForwardResult> {
    this.calls.push({ kind: 'forward', data: snapshot(data), lossFn });
    return Promise.resolve(this.result(data));
  }

  forwardBackward(data: readonly Datum[], lossFn: LossFn): Promise<ForwardResult> {
    this.calls.push({ kind: 'forwardBackward', data: snapshot(data), lossFn });
    return Promise.resolve(this.result(data));
  }

  optimStep(_params: AdamParams): Promise<OptimStepResult> {
    this.optimSteps++;
    return Promise.resolve({ gradNorm: this.gradNorm, metrics: {} });
  }

  saveWeights(name: string): Promise<string> {
    this.saved.push(name);
    return Promise.resolve(`mem://${name}`);
  }

  loadWeights(): Promise<void> {
    return Promise.resolve();
  }

  saveWeightsForSampler(name: string): Promise<SamplerWeights> {
    return Promise.resolve({ name, path: `mem://sampler/${name}` });
  }
}

export interface MemoryContext<K extends RunKind = RunKind> extends ExecutorContext<K> {
  readonly steps: Map<number, Record<string, number | null>>;
  readonly commitOrder: number[];
  readonly checkpoints: Array<{ step: number; path: string }>;
  readonly controller: AbortController;
  /** What `pause` was called with, in order (each also aborts `controller`). */
  readonly pauses: Array<Parameters<ExecutorContext['pause']>[0]>;
}

/** `spec` as its kind's spec (what an executor of `kind` takes); throws on another kind. */
export function specOfKind<K extends RunKind>(kind: K, spec: RunSpec): SpecOf<K> {
  if (!isSpecOf(spec, kind)) throw new Error(`expected a ${kind} spec, got ${spec.kind}`);
  return spec;
}

function isSpecOf<K extends RunKind>(spec: RunSpec, kind: K): spec is SpecOf<K> {
  return spec.kind === kind;
}

/** An ExecutorContext keeping step records in memory, idempotent by step like the store. */
export function memoryContext<K extends RunKind>(
  spec: RunSpec & { kind: K },
  resources: RunResources,
  options: {
    resumeFrom?: ExecutorContext['resumeFrom'];
    runId?: string;
    attempt?: number;
    /** Steps an earlier attempt committed (a retried run). */
    committed?: ReadonlyMap<number, Record<string, number | null>>;
    onCommit?: (step: number, ctx: MemoryContext<K>) => void;
    /** Where the run writes artifacts (the rollout ledger); default: nowhere writable. */
    artifactDir?: string;
  } = {},
): MemoryContext<K> {
  const steps = new Map<number, Record<string, number | null>>(options.committed ?? []);
  const commitOrder: number[] = [];
  const checkpoints: Array<{ step: number; path: string }> = [];
  const controller = new AbortController();
  const pauses: MemoryContext<K>['pauses'] = [];
  const ctx: MemoryContext<K> = {
    runId: options.runId ?? 'run_01JTEST0000000000000000000',
    spec: specOfKind(spec.kind, spec),
    resources,
    resumeFrom: options.resumeFrom ?? null,
    attempt: options.attempt ?? 1,
    committedSteps: () =>
      Promise.resolve(
        [...steps]
          .sort(([a], [b]) => a - b)
          .map(([step, metrics]) => ({ step, metrics, at: new Date(0).toISOString() })),
      ),
    artifactDir: options.artifactDir ?? '/nonexistent',
    stopSignal: controller.signal,
    steps,
    commitOrder,
    checkpoints,
    controller,
    pauses,
    pause(cause) {
      pauses.push(cause);
      controller.abort(new Error(cause.reason));
      return Promise.resolve();
    },
    commitStep(step, metrics) {
      commitOrder.push(step);
      const fresh = !steps.has(step);
      if (fresh) steps.set(step, { ...metrics });
      options.onCommit?.(step, ctx);
      return Promise.resolve(fresh ? 'committed' : 'duplicate');
    },
    recordCheckpoint(step, path) {
      checkpoints.push({ step, path });
      return Promise.resolve();
    },
  };
  return ctx;
}
