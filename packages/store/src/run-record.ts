// Run hash <-> RunResource. The hash stores scalars as strings, labels/spec as JSON.
import {
  AdapterDemand,
  FleetShares,
  PauseRequest,
  type RunKind,
  RunResource,
  type RunSpec,
  type RunState,
  type Transition,
  parseStored,
} from '@anneal/protocol';
import { Type } from '@sinclair/typebox';
import { guardrailStateFromHash } from './guardrails.ts';

const AdapterDemands = Type.Array(AdapterDemand);

/** Hash fields of a new run (what createRun writes). */
export function newRunFields(input: {
  id: string;
  tenant: string;
  spec: RunSpec & { pool: string };
  nowIso: string;
  idempotencyKey?: string;
  parent?: { run: string; step: number };
  /** Adapter slots per endpoint (protocol `runAdapterDemand`); none: no field. */
  adapterDemand?: readonly AdapterDemand[];
}): Record<string, string> {
  const { id, tenant, spec, nowIso } = input;
  return {
    id,
    tenant,
    kind: spec.kind,
    state: 'queued',
    pool: spec.pool,
    priority: String(spec.priority),
    labels: JSON.stringify(spec.labels),
    spec: JSON.stringify(spec),
    createdAt: nowIso,
    updatedAt: nowIso,
    attempt: '0',
    cancelRequested: '0',
    ...(spec.name !== undefined && { name: spec.name }),
    ...(input.idempotencyKey !== undefined && { idempotencyKey: input.idempotencyKey }),
    ...(input.parent && { parentRun: input.parent.run, parentStep: String(input.parent.step) }),
    ...(input.adapterDemand !== undefined &&
      input.adapterDemand.length > 0 && { adapterDemand: JSON.stringify(input.adapterDemand) }),
  };
}

function optional<K extends string>(key: K, value: string | undefined) {
  return value === undefined || value === '' ? {} : ({ [key]: value } as Record<K, string>);
}

/** Converts a run hash to the API resource; null when the hash is empty (no such run). */
export function runFromHash(
  hash: Record<string, string>,
  transitions?: Transition[],
): RunResource | null {
  if (!hash.id) return null;
  const source = `run ${hash.id}`;
  const checkpointStep = hash.checkpointStep;
  return {
    id: hash.id,
    tenant: hash.tenant ?? '',
    kind: hash.kind as RunKind,
    state: hash.state as RunState,
    pool: hash.pool ?? '',
    priority: Number(hash.priority ?? 0),
    labels: parseStored(RunResource.properties.labels, hash.labels ?? '{}', `${source} labels`),
    ...optional('name', hash.name),
    spec: parseStored(RunResource.properties.spec, hash.spec ?? '{}', `${source} spec`),
    createdAt: hash.createdAt ?? '',
    updatedAt: hash.updatedAt ?? '',
    ...optional('startedAt', hash.startedAt),
    ...optional('endedAt', hash.endedAt),
    ...optional('workerId', hash.workerId),
    attempt: Number(hash.attempt ?? 0),
    ...optional('waitingReason', hash.waitingReason),
    ...(hash.adapterDemand && {
      adapterDemand: parseStored(AdapterDemands, hash.adapterDemand, `${source} adapterDemand`),
    }),
    ...(hash.fleetShare && {
      fleetShare: parseStored(FleetShares, hash.fleetShare, `${source} fleetShare`),
    }),
    cancelRequested: hash.cancelRequested === '1',
    ...(hash.pause && { pause: parseStored(PauseRequest, hash.pause, `${source} pause`) }),
    ...optional('error', hash.error),
    ...(hash.lastStep !== undefined && { lastStep: Number(hash.lastStep) }),
    ...(checkpointStep !== undefined && {
      checkpoint: {
        step: Number(checkpointStep),
        path: hash.checkpointPath ?? '',
        at: hash.checkpointAt ?? '',
      },
    }),
    ...(hash.parentRun !== undefined && {
      parent: { run: hash.parentRun, step: Number(hash.parentStep ?? 0) },
    }),
    ...(transitions !== undefined && { transitions }),
    ...guardrailsOf(hash, source),
  };
}

function guardrailsOf(
  hash: Record<string, string>,
  source: string,
): Pick<RunResource, 'guardrails'> {
  const guardrails = guardrailStateFromHash(hash, source);
  return guardrails === undefined ? {} : { guardrails };
}

/** Parsed only for runs the guardrails wrote to (their firings are a JSON array in the hash). */
function guardrailsJson(hash: Record<string, string>): string {
  const guardrails = guardrailStateFromHash(hash, `run ${hash.id}`);
  return guardrails === undefined ? '' : `,"guardrails":${JSON.stringify(guardrails)}`;
}

/** JSON string of a field value, or nothing when the field is absent/empty. */
function jsonField(key: string, value: string | undefined): string {
  return value === undefined || value === '' ? '' : `,"${key}":${JSON.stringify(value)}`;
}

/**
 * The same resource as `runFromHash`, serialised straight from the hash: the stored spec,
 * labels and transition JSON are spliced in, never parsed and re-stringified (GET hot path).
 * `waitingReason` fills in when the hash has none.
 */
export function runJsonFromHash(
  hash: Record<string, string>,
  transitionsJson?: readonly string[],
  waitingReason?: string,
): string | null {
  if (!hash.id) return null;
  const parts = [
    `{"id":${JSON.stringify(hash.id)}`,
    `,"tenant":${JSON.stringify(hash.tenant ?? '')}`,
    `,"kind":${JSON.stringify(hash.kind ?? '')}`,
    `,"state":${JSON.stringify(hash.state ?? '')}`,
    `,"pool":${JSON.stringify(hash.pool ?? '')}`,
    `,"priority":${Number(hash.priority ?? 0)}`,
    `,"labels":${hash.labels ?? '{}'}`,
    jsonField('name', hash.name),
    `,"spec":${hash.spec ?? '{}'}`,
    `,"createdAt":${JSON.stringify(hash.createdAt ?? '')}`,
    `,"updatedAt":${JSON.stringify(hash.updatedAt ?? '')}`,
    jsonField('startedAt', hash.startedAt),
    jsonField('endedAt', hash.endedAt),
    jsonField('workerId', hash.workerId),
    `,"attempt":${Number(hash.attempt ?? 0)}`,
    jsonField('waitingReason', hash.waitingReason || waitingReason),
    hash.adapterDemand ? `,"adapterDemand":${hash.adapterDemand}` : '',
    hash.fleetShare ? `,"fleetShare":${hash.fleetShare}` : '',
    `,"cancelRequested":${hash.cancelRequested === '1'}`,
    hash.pause ? `,"pause":${hash.pause}` : '',
    jsonField('error', hash.error),
    hash.lastStep === undefined ? '' : `,"lastStep":${Number(hash.lastStep)}`,
    hash.checkpointStep === undefined
      ? ''
      : `,"checkpoint":{"step":${Number(hash.checkpointStep)},"path":${JSON.stringify(hash.checkpointPath ?? '')},"at":${JSON.stringify(hash.checkpointAt ?? '')}}`,
    hash.parentRun === undefined
      ? ''
      : `,"parent":{"run":${JSON.stringify(hash.parentRun)},"step":${Number(hash.parentStep ?? 0)}}`,
    transitionsJson === undefined ? '' : `,"transitions":[${transitionsJson.join(',')}]`,
    guardrailsJson(hash),
    '}',
  ];
  return parts.join('');
}
