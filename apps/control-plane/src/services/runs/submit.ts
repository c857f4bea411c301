// POST /v1/runs: parse + validate the spec, resolve named resources, create the run record
// (idempotently) and enqueue its job in the pool's queue.
import { createHash } from 'node:crypto';
import {
  type Issue,
  type ResolveIssue,
  type RunParent,
  type RunResource,
  type RunSpec,
  adapterDemandIssues,
  checkSpecLimits,
  formatIssues,
  parseRunSpec,
  resolveRunSpec,
  runAdapterDemand,
  sharedReferenceKey,
} from '@anneal/protocol';
import {
  createRun,
  getCatalogueEntry,
  getRun,
  newRunId,
  releaseCheckpointUse,
  sharedReferenceId,
  useCheckpoint,
} from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError } from '../../errors.ts';
import { checkTenantBudget } from './usage.ts';

export interface SubmitRequest {
  tenant: string;
  /** Raw JSON or YAML text of the spec. */
  body: string;
  idempotencyKey?: string;
}

export interface SubmitResult {
  run: RunResource;
  /** false when an Idempotency-Key replay returned the existing run. */
  created: boolean;
}

/** JSON with sorted keys, so equal specs hash equally whatever their field order or syntax. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function specError(errors: readonly Issue[]): AnnealError {
  return new AnnealError('ANNEAL_ERR_RUN_SPEC_INVALID', formatIssues(errors), errors);
}

function resolveError(errors: readonly ResolveIssue[]): AnnealError {
  const capability = errors.length > 0 && errors.every((e) => e.reason === 'capability');
  const plain = errors.map(({ path, message }) => ({ path, message }));
  return new AnnealError(
    capability ? 'ANNEAL_ERR_TRAINER_CAPABILITY' : 'ANNEAL_ERR_UNKNOWN_RESOURCE',
    formatIssues(plain),
    plain,
  );
}

interface CheckpointRef {
  /** JSON pointer of the reference (`/model`, `/models/N`). */
  at: string;
  run: string;
  step?: number;
}

function checkpointRefs(spec: RunSpec): CheckpointRef[] {
  const refs: CheckpointRef[] = [];
  const own = spec.model?.checkpoint;
  if (own !== undefined) refs.push({ at: '/model', ...own });
  if (spec.kind === 'eval') {
    spec.models?.forEach((model, i) => {
      if (model.checkpoint !== undefined) refs.push({ at: `/models/${i}`, ...model.checkpoint });
    });
  }
  return refs;
}

/** Every checkpoint a spec starts from or evaluates (`model`, eval `models[]`) must be a run of
 * the same tenant that saved a checkpoint — at `step`, one its retention kept: refused here, not
 * accepted and failed by a worker. Returns the parent of the run (`model.checkpoint`). */
async function checkCheckpointRefs(
  ctx: AppContext,
  tenant: string,
  refs: readonly CheckpointRef[],
): Promise<RunParent | undefined> {
  const issues: ResolveIssue[] = [];
  let parent: RunParent | undefined;
  for (const { at, run, step } of refs) {
    const path = `${at}/checkpoint/run`;
    const source = await getRun(ctx.store, run, { tenant });
    if (!source) {
      issues.push({ path, message: `no run '${run}' in this tenant`, reason: 'unknown' });
      continue;
    }
    if (step === undefined) {
      if (!source.checkpoint) {
        issues.push({
          path,
          message: `run '${run}' has no checkpoint yet (state ${source.state})`,
          reason: 'unknown',
        });
      } else if (at === '/model') parent = { run, step: source.checkpoint.step };
      continue;
    }
    const entry = await getCatalogueEntry(ctx.store, run, step);
    if (!entry || entry.deleted) {
      issues.push(stepIssue(at, run, step, entry ? 'deleted' : 'unknown'));
    } else if (at === '/model') parent = { run, step };
  }
  if (issues.length > 0) throw resolveError(issues);
  return parent;
}

function stepIssue(at: string, run: string, step: number, why: 'unknown' | 'deleted') {
  const message =
    why === 'deleted'
      ? `run '${run}' deleted its checkpoint at step ${step} (checkpoint retention); GET /v1/runs/${run}/checkpoints lists the kept ones`
      : `run '${run}' has no checkpoint at step ${step}; GET /v1/runs/${run}/checkpoints lists them`;
  return { path: `${at}/checkpoint/step`, message, reason: 'unknown' as const };
}

/** Takes a use of each checkpoint the new run starts from at a step, so retention keeps them
 * until the run no longer needs them; refused (naming the field) when one was retired since. */
async function useCheckpoints(
  ctx: AppContext,
  tenant: string,
  refs: readonly CheckpointRef[],
  runId: string,
): Promise<void> {
  const taken: string[] = [];
  for (const { at, run, step } of refs) {
    if (step === undefined) continue;
    const used = await useCheckpoint(ctx.store, { run, step, tenant }, runId);
    if (used === 'ok') {
      taken.push(run);
      continue;
    }
    await Promise.all(taken.map((source) => releaseCheckpointUse(ctx.store, source, runId)));
    throw resolveError([stepIssue(at, run, step, used === 'deleted' ? 'deleted' : 'unknown')]);
  }
}

/** Everything a submission is checked for before anything is written: the spec as submitted
 * and resolved, and the checkpoints it starts from (POST /v1/runs/estimate stops here). */
export async function validateSubmission(ctx: AppContext, tenant: string, body: string) {
  const parsed = parseRunSpec(body);
  if (!parsed.ok) throw specError(parsed.errors);
  const resolved = resolveRunSpec(parsed.value, ctx.operator, ctx.datasetFacts);
  if (!resolved.ok) throw resolveError(resolved.errors as ResolveIssue[]);
  const overLimit = checkSpecLimits(resolved.value, ctx.operator.limits);
  if (overLimit.length > 0) {
    throw new AnnealError('ANNEAL_ERR_RUN_SPEC_OVER_LIMIT', formatIssues(overLimit), overLimit);
  }
  const adapterDemand = runAdapterDemand(resolved.value, ctx.operator);
  const neverFits = adapterDemandIssues(adapterDemand, ctx.operator);
  if (neverFits.length > 0) {
    throw new AnnealError('ANNEAL_ERR_RUN_SPEC_OVER_LIMIT', formatIssues(neverFits), neverFits);
  }
  const refs = checkpointRefs(resolved.value);
  const parent = await checkCheckpointRefs(ctx, tenant, refs);
  return { submitted: parsed.value, resolved: resolved.value, refs, parent, adapterDemand };
}

export type ValidSubmission = Awaited<ReturnType<typeof validateSubmission>>;

export async function submitRun(ctx: AppContext, request: SubmitRequest): Promise<SubmitResult> {
  const validated = await validateSubmission(ctx, request.tenant, request.body);
  await checkTenantBudget(ctx, request.tenant);
  const key = request.idempotencyKey;
  return createSubmittedRun(ctx, request.tenant, validated, {
    ...(key !== undefined && {
      idempotency: {
        key,
        bodyHash: createHash('sha256').update(canonicalJson(validated.submitted)).digest('hex'),
      },
    }),
  });
}

/** The demand with the shared reference of the run's tenant and starting weights named on it
 * (docs/operations.md "Shared references"); drawn here, not at validation, since drawing a new
 * id writes it. */
async function demandWithSharedReference(
  ctx: AppContext,
  tenant: string,
  { resolved, adapterDemand }: ValidSubmission,
) {
  const key = sharedReferenceKey(resolved, ctx.operator);
  if (key === undefined || adapterDemand.length === 0) return adapterDemand;
  return runAdapterDemand(resolved, ctx.operator, await sharedReferenceId(ctx.store, tenant, key));
}

/** Creates a validated run (its checkpoint uses taken, its job sent by the outbox relay); an
 * Idempotency-Key replay returns the run the key made. `id`: chosen by the caller (a sweep
 * lists its runs' ids before they exist). */
export async function createSubmittedRun(
  ctx: AppContext,
  tenant: string,
  validated: ValidSubmission,
  options: { id?: string; idempotency?: { key: string; bodyHash: string } },
): Promise<SubmitResult> {
  const { resolved, refs, parent } = validated;
  const adapterDemand = await demandWithSharedReference(ctx, tenant, validated);
  const id = options.id ?? newRunId();
  await useCheckpoints(ctx, tenant, refs, id);

  const result = await createRun(ctx.store, {
    id,
    tenant,
    spec: resolved,
    adapterDemand,
    ...(parent && { parent }),
    ...(options.idempotency && { idempotency: options.idempotency }),
  });
  // An Idempotency-Key replay: the run it returns holds its own uses (a sweep's replay may
  // return the run of this very id, whose uses these are).
  if (result.status === 'conflict' || (result.status === 'existing' && result.run.id !== id)) {
    await Promise.all(refs.map((ref) => releaseCheckpointUse(ctx.store, ref.run, id)));
  }
  if (result.status === 'conflict') {
    throw new AnnealError(
      'ANNEAL_ERR_IDEMPOTENCY_CONFLICT',
      `Idempotency-Key was first used for run ${result.runId} with a different body`,
    );
  }
  // The job is added in the background (services/outbox.ts); a replay of a still-queued run
  // re-sends it, which is a no-op when the job exists (job id = run id).
  if (result.status === 'created' || result.run.state === 'queued') ctx.relay.enqueue(result.run);
  return { run: result.run, created: result.status === 'created' };
}
