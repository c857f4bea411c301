// A guardrail rollback of a GRPO run (docs/guardrails.md "Rollback"): the trainer goes back to
// the restored checkpoint — a model opened at it, so its weights and optimizer state are the
// checkpoint's (before the run's first checkpoint: its starting weights, loaded as at its start) — and the sampler serves that checkpoint's weights as the policy version of the
// step, under the new generation's name, so no batch of the next steps samples weights the
// rollback discarded. The frozen reference and its cached generations stay as they are.
import type { TrainerModel } from '@anneal/engines';
import type { Epoch } from '../common/guardrails/epoch.ts';
import { openModelAt, restoreSource } from '../common/trainer-model.ts';
import { syncWeights } from '../common/weight-sync.ts';
import type { ExecutorContext, RestorePoint } from '../types.ts';
import { PolicyVersions } from './policy-versions.ts';
import { policyServingName, samplerExportName, type GrpoState } from './setup.ts';

/** Called with the batch pipeline drained (no version pinned). */
export async function restoreGrpo(
  ctx: ExecutorContext<'grpo'>,
  state: GrpoState,
  point: RestorePoint,
  epoch: Epoch,
): Promise<TrainerModel> {
  const { resources, runId } = ctx;
  await state.versions.releaseAll();
  const [source, load] = restoreSource(ctx, point);
  const model = await openModelAt(ctx, source, 'lm', load);
  const discarded = state.model;
  const name = policyServingName(
    runId,
    state.spec.rollout.maxPolicyLag,
    point.step,
    epoch.rollbacks,
  );
  // A new model (a new model_id on Tinker backends): its export names cannot collide.
  const served = await syncWeights(
    model,
    resources.inference,
    samplerExportName(runId, point.step),
    name,
  );
  state.model = model;
  state.versions = new PolicyVersions(
    { inference: resources.inference, model },
    { version: point.step, name, path: served.path, policyExport: true },
  );
  state.policyEnv = { ...state.policyEnv, config: { ...state.policyEnv.config, model: name } };
  state.epoch = epoch;
  await discarded.release?.().catch(() => undefined); // the run's end releases it otherwise
  return model;
}
