// POST /v1/runs: parse + validate the spec, resolve named resources, create the run record
// (idempotently) and enqueue its job in the pool's queue.
import { createHash } from 'node:crypto';
import {
  type Issue,
  type ResolveIssue,
  type RunResource,
  type RunSpec,
  checkSpecLimits,
  formatIssues,
  parseRunSpec,
  resolveRunSpec,
} from '@anneal/protocol';
import { createRun, getRun } from '@anneal/store';
import type { AppContext } from '../context.ts';
import { AnnealError } from '../errors.ts';

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

/** Every checkpoint a spec starts from or evaluates (`model`, eval `models[]`) must be a run of
 * the same tenant that saved a checkpoint: refused here, not accepted and failed by a worker. */
async function checkCheckpointRefs(ctx: AppContext, tenant: string, spec: RunSpec): Promise<void> {
  const refs: Array<{ path: string; run: string }> = [];
  const own = spec.model?.checkpoint?.run;
  if (own !== undefined) refs.push({ path: '/model/checkpoint/run', run: own });
  if (spec.kind === 'eval') {
    spec.models?.forEach((model, i) => {
      const run = model.checkpoint?.run;
      if (run !== undefined) refs.push({ path: `/models/${i}/checkpoint/run`, run });
    });
  }
  const issues: ResolveIssue[] = [];
  for (const { path, run } of refs) {
    const source = await getRun(ctx.store, run, { tenant });
    if (!source) {
      issues.push({ path, message: `no run '${run}' in this tenant`, reason: 'unknown' });
    } else if (!source.checkpoint) {
      issues.push({
        path,
        message: `run '${run}' has no checkpoint yet (state ${source.state})`,
        reason: 'unknown',
      });
    }
  }
  if (issues.length > 0) throw resolveError(issues);
}

export async function submitRun(ctx: AppContext, request: SubmitRequest): Promise<SubmitResult> {
  const parsed = parseRunSpec(request.body);
  if (!parsed.ok) throw specError(parsed.errors);
  const resolved = resolveRunSpec(parsed.value, ctx.operator, ctx.datasetFacts);
  if (!resolved.ok) throw resolveError(resolved.errors as ResolveIssue[]);
  const overLimit = checkSpecLimits(resolved.value, ctx.operator.limits);
  if (overLimit.length > 0) {
    throw new AnnealError('ANNEAL_ERR_RUN_SPEC_OVER_LIMIT', formatIssues(overLimit), overLimit);
  }
  await checkCheckpointRefs(ctx, request.tenant, resolved.value);

  const key = request.idempotencyKey;
  const result = await createRun(ctx.store, {
    tenant: request.tenant,
    spec: resolved.value,
    ...(key !== undefined && {
      idempotency: {
        key,
        bodyHash: createHash('sha256').update(canonicalJson(parsed.value)).digest('hex'),
      },
    }),
  });
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
