// The run:notice a run gets when it asks for gradient clipping its trainer backend does not apply.
import type { TrainerCapabilities, TrainerModel } from '@anneal/engines';
import { validateRunSpec, type RunSpec } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { memoryContext } from '../../../test/executors/fakes.ts';
import type { RunResources } from '../types.ts';
import { openTrainerModel } from './trainer-model.ts';

function sftSpec(gradClipNorm: number, trainer?: string): RunSpec {
  const parsed = validateRunSpec({
    kind: 'sft',
    optimizer: { gradClipNorm },
    ...(trainer && { endpoints: { trainer } }),
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

function contextFor(spec: RunSpec, capabilities: Partial<TrainerCapabilities>) {
  const model = { id: 'model-1' } as TrainerModel;
  const resources = {
    trainer: {
      capabilities: {
        kinds: ['sft'],
        losses: ['cross_entropy'],
        reduction: 'sum',
        ...capabilities,
      },
      createModel: () => Promise.resolve(model),
      close: () => Promise.resolve(),
    },
    model: { label: 'base', baseModel: 'b', checkpoint: null },
  } as unknown as RunResources;
  const notices: Array<{ code: string; message: string }> = [];
  const ctx = memoryContext(spec, resources);
  ctx.notice = (notice) => {
    notices.push(notice);
    return Promise.resolve();
  };
  return { ctx, notices };
}

describe('trainer notices at run start', () => {
  it('says that SkyRL-JAX ignores the requested grad_clip_norm', async () => {
    const { ctx, notices } = contextFor(sftSpec(1, 'skyrl'), { backend: 'skyrl-jax' });
    await openTrainerModel(ctx, 'lm');
    expect(notices).toEqual([
      {
        code: 'grad_clip_not_applied',
        message:
          "optimizer.gradClipNorm 1 is not applied: trainer endpoint 'skyrl' (backend skyrl-jax) " +
          'ignores grad_clip_norm and does not clip, so gradients are unclipped (docs/engines.md "Gradient norm")',
      },
    ]);
  });

  it('stays quiet when the backend clips per request, no clipping is asked, or no backend is declared', async () => {
    for (const [spec, backend] of [
      [sftSpec(1), 'tinker'],
      [sftSpec(0), 'skyrl-jax'],
      [sftSpec(1), undefined],
    ] as const) {
      const { ctx, notices } = contextFor(spec, backend ? { backend } : {});
      await openTrainerModel(ctx, 'lm');
      expect(notices).toEqual([]);
    }
  });

  it('says that SkyRL-FSDP applies only the learning rate of adam_params', async () => {
    const { ctx, notices } = contextFor(sftSpec(0, 'fsdp'), { backend: 'skyrl-fsdp' });
    await openTrainerModel(ctx, 'lm');
    expect(notices).toEqual([
      {
        code: 'adam_params_not_applied',
        message:
          "optimizer.beta1, beta2, eps and weightDecay are not applied: trainer endpoint 'fsdp' " +
          '(backend skyrl-fsdp) applies only the learning rate of each optim_step; the others are ' +
          'fixed by the server’s optimizer config (docs/engines.md "Conformance")',
      },
    ]);
  });
});
