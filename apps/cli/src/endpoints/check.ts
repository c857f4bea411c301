// `anneal endpoints check`: what an operator wants to know about every registered endpoint before
// a run uses it, from the live servers and the operator config. Per vLLM replica: reachable,
// server version, served model and context window, runtime LoRA as a run uses it (a scratch
// adapter loaded, sampled from and unloaded: the only change made), `load_inplace`, and
// the logprobs mode measured against the declared one; the adapter directory from this machine.
// Per trainer: reachable, the backend's traits (reduction, sampler export, gradient clipping)
// and what its declared capabilities allow, and whether its exports can reach the vLLM endpoints
// it may be paired with. Each finding is a row: ok, warn (cannot tell) or fail (a run would break).
import type { logprobsModeMismatch, probeLogprobsMode, probeVllmEndpoint } from '@anneal/engines';
import {
  type InferenceEndpointConfig,
  type OperatorConfig,
  TRAINER_BACKEND_TRAITS,
  type TrainerEndpointConfig,
  type VllmServer,
  reportedLogprobsMode,
  samplerServerIssue,
  vllmPairingIssue,
  vllmWeightsFormatIssue,
} from '@anneal/protocol';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckRow {
  endpoint: string;
  /** Replica or server URL, or '' for checks of the endpoint as a whole. */
  target: string;
  check: string;
  status: CheckStatus;
  detail: string;
}

/** The live probes (from @anneal/engines; injected so tests can count or replace them). */
export interface EndpointProbes {
  probeVllmEndpoint: typeof probeVllmEndpoint;
  probeLogprobsMode: typeof probeLogprobsMode;
  logprobsModeMismatch: typeof logprobsModeMismatch;
  probeTinkerServer(url: string, apiKey: string | undefined): Promise<TinkerServerProbe>;
}

export interface TinkerServerProbe {
  reachable: boolean;
  /** GET /api/v1/healthz status, when it answered. */
  status?: number;
  /** Base models the server reports (get_server_capabilities), when it has the route. */
  models?: string[];
  problem?: string;
}

/** `owned_by` of the embedded sampler server's model cards (@anneal/engines
 * EMBEDDED_SAMPLER_OWNER; a type import only here, so the value is repeated). */
const EMBEDDED_OWNER = 'anneal-embedded';

/** A natural-language prompt: its first token's distribution is peaked enough to measure. */
const LOGPROBS_PROMPT = 'The capital of France is';

const row = (
  endpoint: string,
  target: string,
  check: string,
  status: CheckStatus,
  detail: string,
): CheckRow => ({ endpoint, target, check, status, detail });

/** The exit status of `anneal endpoints check`: 1 when any check failed. */
export function checkExitCode(rows: readonly CheckRow[]): 0 | 1 {
  return rows.some((r) => r.status === 'fail') ? 1 : 0;
}

export async function checkEndpoints(
  operator: OperatorConfig,
  secrets: Readonly<Record<string, string | undefined>>,
  probes: EndpointProbes,
): Promise<CheckRow[]> {
  const rows: CheckRow[] = [];
  for (const [name, endpoint] of Object.entries(operator.inference)) {
    rows.push(...(await checkInference(name, endpoint, operator, secrets, probes)));
  }
  for (const [name, endpoint] of Object.entries(operator.trainers)) {
    rows.push(...(await checkTrainer(name, endpoint, operator, secrets, probes)));
  }
  return rows;
}

function secret(
  name: string,
  env: string | undefined,
  secrets: Readonly<Record<string, string | undefined>>,
  rows: CheckRow[],
): string | undefined {
  if (env === undefined) return undefined;
  const value = secrets[env];
  if (value === undefined || value === '') {
    rows.push(row(name, '', 'api key', 'fail', `apiKeyEnv ${env} is not set in this environment`));
  }
  return value || undefined;
}

async function checkInference(
  name: string,
  endpoint: InferenceEndpointConfig,
  operator: OperatorConfig,
  secrets: Readonly<Record<string, string | undefined>>,
  probes: EndpointProbes,
): Promise<CheckRow[]> {
  const rows: CheckRow[] = [];
  if (endpoint.type === 'embedded') {
    return [row(name, '', 'embedded sampler', 'ok', 'built in (ONNX Runtime in worker threads)')];
  }
  const apiKey = secret(name, endpoint.apiKeyEnv, secrets, rows);
  if (endpoint.type === 'tinker') {
    const server = await probes.probeTinkerServer(endpoint.url, apiKey);
    rows.push(tinkerReachability(name, endpoint.url, server));
    return rows;
  }
  const probe = await probes.probeVllmEndpoint({
    name,
    replicas: endpoint.replicas,
    ...(endpoint.servedModel !== undefined && { model: endpoint.servedModel }),
    ...(apiKey !== undefined && { apiKey }),
    ...(endpoint.adapters && { adapterRoot: endpoint.adapters.root }),
    ...(endpoint.server === 'anneal-embedded' && { scratch: 'onnx' as const }),
  });
  const declaredMode = reportedLogprobsMode(endpoint);
  for (const replica of probe.replicas) {
    const at = (check: string, status: CheckStatus, detail: string) =>
      rows.push(row(name, replica.url, check, status, detail));
    if (!replica.healthy) {
      at('reachable', 'fail', replica.problems.join('; ') || 'no answer');
      continue;
    }
    at('reachable', 'ok', '/health 200');
    at('version', replica.version ? 'ok' : 'warn', replica.version ?? 'no /version route');
    const base = replica.models.filter((m) => m.parent === undefined);
    const served = endpoint.servedModel ?? base[0]?.id;
    const model = base.find((m) => m.id === served);
    at('server', ...serverIdentity(endpoint.server ?? 'vllm', model?.ownedBy));
    if (model === undefined) {
      at(
        'served model',
        'fail',
        `'${served ?? '?'}' not served (serves: ${base.map((m) => m.id).join(', ') || 'nothing'})`,
      );
    } else {
      const window = model.maxModelLen ?? endpoint.maxModelLen;
      at(
        'served model',
        'ok',
        `${model.id}, max_model_len ${window ?? 'not reported (set maxModelLen)'}`,
      );
    }
    // What a weight sync and a rollout do, with a scratch adapter: load, sample, unload.
    const lora = replica.lora;
    const steps = [
      ['lora load', lora?.load],
      ['lora sample', lora?.sample],
      ['lora unload', lora?.unload],
    ] as const;
    for (const [check, step] of steps) {
      if (step !== undefined) at(check, step.ok ? 'ok' : 'fail', step.detail);
    }
    at(
      'runtime LoRA',
      replica.loraEnabled ? 'ok' : 'fail',
      replica.loraEnabled
        ? `works; max rank ${endpoint.maxLoraRank ?? 16} (declared: vLLM does not report it)`
        : `does not work (${lora === undefined ? 'not checked' : 'see the lora rows'})`,
    );
    at('lora capacity', ...loraCapacity(replica.maxLoras, runSlots(operator)));
    if (endpoint.maxLoras !== undefined) {
      at('declared maxLoras', ...declaredCapacity(endpoint.maxLoras, replica.maxLoras));
    }
    at(
      'load_inplace',
      'ok',
      replica.loadInplace === true
        ? 'supported (weights reload in place)'
        : replica.loadInplace === false
          ? 'not supported (< v0.15): each policy version gets its own adapter name'
          : 'unknown version: versioned adapter names are used, which work either way',
    );
    for (const problem of replica.problems) at('replica', 'fail', problem);
    if (served !== undefined && model !== undefined) {
      try {
        const verdict = await probes.probeLogprobsMode({
          endpoint: name,
          baseUrl: replica.url,
          model: served,
          prompt: await tokenize(replica.url, served, apiKey),
          ...(apiKey !== undefined && { apiKey }),
        });
        const mismatch = probes.logprobsModeMismatch(name, declaredMode, verdict);
        at(
          'logprobs mode',
          mismatch === undefined ? 'ok' : verdict.mode === 'unknown' ? 'warn' : 'fail',
          mismatch ?? `${verdict.mode} as declared (${verdict.detail})`,
        );
      } catch (error) {
        at('logprobs mode', 'warn', `not measured: ${(error as Error).message}`);
      }
    }
  }
  if (probe.adapterDir) {
    const dir = probe.adapterDir;
    const usable = dir.readable && dir.writable;
    rows.push(
      row(
        name,
        dir.path,
        'adapter directory',
        usable ? 'ok' : 'fail',
        usable
          ? 'readable and writable from this machine (the replicas must mount the same path)'
          : (dir.problem ?? 'not readable and writable from this machine'),
      ),
    );
  }
  // Which trainers' exports this endpoint can load (a full-weights export is not an adapter; the
  // embedded trainer's ONNX exports load on the embedded sampler server alone).
  for (const [trainerName, trainer] of Object.entries(operator.trainers)) {
    if (trainer.type !== 'tinker' || trainer.backend === undefined) continue;
    const format = TRAINER_BACKEND_TRAITS[trainer.backend].samplerExport;
    const server = endpoint.server ?? 'vllm';
    const pairing = { server, inference: name, trainer: trainerName, exportFormat: format };
    const issue =
      samplerServerIssue(pairing) ??
      (format === 'onnx' ? undefined : vllmWeightsFormatIssue({ name }, format)) ??
      vllmPairingIssue({ backend: trainer.backend, trainer: trainerName, inference: name });
    rows.push(
      row(
        name,
        '',
        `pairing with ${trainerName}`,
        issue === undefined ? 'ok' : 'fail',
        issue ??
          (format === 'onnx'
            ? 'ONNX exports load as weight sets on the embedded sampler server'
            : `${format} exports load as LoRA adapters`),
      ),
    );
  }
  return rows;
}

/** Whether the replica is the server the endpoint declares: vLLM's model cards say `owned_by:
 * vllm`, the embedded sampler server's `anneal-embedded` (its `server`). */
function serverIdentity(declared: VllmServer, ownedBy: string | undefined): [CheckStatus, string] {
  const answering =
    ownedBy === EMBEDDED_OWNER ? 'anneal-embedded' : ownedBy === undefined ? undefined : 'vllm';
  if (answering === undefined)
    return ['warn', `declared ${declared}; the model card names no owner`];
  if (answering === declared) return ['ok', `${declared} (owned_by ${ownedBy})`];
  return [
    'fail',
    `declared server: ${declared}, but the replica is ${answering} (owned_by ${ownedBy}): ` +
      (answering === 'vllm'
        ? "vLLM cannot load the embedded trainer's ONNX exports"
        : "the embedded sampler loads only the embedded trainer's ONNX exports"),
  ];
}

/** Runs one worker may hold at once (every pool's slots): each samples its policy and its
 * reference adapter. */
function runSlots(operator: OperatorConfig): number {
  return Math.max(
    1,
    Object.values(operator.pools).reduce((sum, pool) => sum + (pool.slots ?? 1), 0),
  );
}

/** Whether `--max-loras` holds the adapters of the runs one worker runs at once in a batch. */
function loraCapacity(maxLoras: number | undefined, runs: number): [CheckStatus, string] {
  const needed = 2 * runs;
  const cache =
    '--max-cpu-loras (not reported; vLLM defaults it to --max-loras) bounds the adapters kept ' +
    'loaded: evicted ones are re-read from disk on their next request';
  if (maxLoras === undefined) {
    return [
      'warn',
      `not reported (no vllm:lora_requests_info on /metrics): ${runs} run(s) at once need ` +
        `--max-loras >= ${needed} (a policy and a reference each); ${cache}`,
    ];
  }
  if (maxLoras < needed) {
    return [
      'warn',
      `--max-loras ${maxLoras} holds fewer adapters per batch than the ${needed} of ${runs} ` +
        `run(s) at once (a policy and a reference each): their requests wait for a slot; set ` +
        `--max-loras >= ${needed}; ${cache}`,
    ];
  }
  return [
    'ok',
    `--max-loras ${maxLoras} per batch (${runs} run(s) at once need ${needed}); ${cache}`,
  ];
}

/** Whether the operator config's `maxLoras` (the slots the scheduler admits runs against,
 * docs/operations.md "Adapter capacity") is what the server runs with. `--max-cpu-loras` and
 * `--max-lora-rank` are not reported by vLLM, so only `--max-loras` can be compared. */
function declaredCapacity(declared: number, reported: number | undefined): [CheckStatus, string] {
  if (reported === undefined) {
    return [
      'warn',
      `maxLoras ${declared} declared; the server does not report --max-loras (no ` +
        'vllm:lora_requests_info on /metrics), so it cannot be compared',
    ];
  }
  if (reported !== declared) {
    return [
      'fail',
      `the server runs --max-loras ${reported} but the operator config declares maxLoras ` +
        `${declared}: runs would be admitted against the wrong number of adapter slots; set ` +
        `maxLoras: ${reported}, or restart vLLM with --max-loras ${declared}`,
    ];
  }
  return ['ok', `--max-loras ${reported} as declared: runs are admitted against ${declared} slots`];
}

function tinkerReachability(name: string, url: string, server: TinkerServerProbe): CheckRow {
  if (!server.reachable || server.status !== 200) {
    return row(
      name,
      url,
      'reachable',
      'fail',
      server.problem ?? `healthz answered ${server.status}`,
    );
  }
  const models = server.models === undefined ? 'models not reported' : server.models.join(', ');
  return row(name, url, 'reachable', 'ok', `healthz 200; ${models}`);
}

async function checkTrainer(
  name: string,
  endpoint: TrainerEndpointConfig,
  operator: OperatorConfig,
  secrets: Readonly<Record<string, string | undefined>>,
  probes: EndpointProbes,
): Promise<CheckRow[]> {
  const rows: CheckRow[] = [];
  const kinds = `kinds ${endpoint.capabilities.kinds.join(', ')}; losses ${endpoint.capabilities.losses.join(', ')}`;
  if (endpoint.type === 'embedded') {
    rows.push(row(name, '', 'embedded trainer', 'ok', `built in; ${kinds}`));
    return rows;
  }
  const apiKey = secret(name, endpoint.apiKeyEnv, secrets, rows);
  const server = await probes.probeTinkerServer(endpoint.url, apiKey);
  rows.push(tinkerReachability(name, endpoint.url, server));
  if (server.models !== undefined) {
    for (const [alias, base] of Object.entries(operator.baseModels)) {
      if (base.model.startsWith('embedded:')) continue;
      const served = server.models.includes(base.model);
      rows.push(
        row(
          name,
          endpoint.url,
          `base model ${alias}`,
          served ? 'ok' : 'warn',
          served ? `${base.model} supported` : `${base.model} not in the server's supported models`,
        ),
      );
    }
  }
  if (endpoint.backend === undefined) {
    rows.push(
      row(
        name,
        '',
        'backend',
        'warn',
        `undeclared: set backend (skyrl-jax | skyrl-fsdp | tinker); ${kinds}`,
      ),
    );
    return rows;
  }
  const traits = TRAINER_BACKEND_TRAITS[endpoint.backend];
  const reductionOk = traits.reduction === endpoint.capabilities.reduction;
  rows.push(
    row(
      name,
      '',
      'backend',
      reductionOk ? 'ok' : 'fail',
      reductionOk
        ? `${endpoint.backend}: reduction ${traits.reduction}, sampler export ${traits.samplerExport}${traits.samplerSync === 'colocated-engines' ? ' (after syncing its own inference engines)' : ''}, grad clip ${traits.gradClip}; ${kinds}`
        : `capabilities.reduction ${endpoint.capabilities.reduction} contradicts backend ${endpoint.backend} (${traits.reduction}): GRPO would optimise the wrong objective`,
    ),
  );
  return rows;
}

/** Prompt ids for the logprobs probe, from the server's own tokenizer (POST /tokenize). */
async function tokenize(baseUrl: string, model: string, apiKey?: string): Promise<number[]> {
  const res = await fetch(`${baseUrl.replace(/\/+$/, '')}/tokenize`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(apiKey !== undefined && { authorization: `Bearer ${apiKey}` }),
    },
    body: JSON.stringify({ model, prompt: LOGPROBS_PROMPT }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`/tokenize answered ${res.status}`);
  const body = (await res.json()) as { tokens?: unknown };
  if (!Array.isArray(body.tokens) || !body.tokens.every((t) => Number.isInteger(t))) {
    throw new Error('/tokenize answered without integer tokens');
  }
  return body.tokens as number[];
}

/** GET /api/v1/healthz and, when the server has it, get_server_capabilities (read-only). */
export async function probeTinkerServer(
  url: string,
  apiKey: string | undefined,
): Promise<TinkerServerProbe> {
  const base = url.replace(/\/+$/, '');
  const headers: Record<string, string> = apiKey === undefined ? {} : { 'x-api-key': apiKey };
  let status: number;
  try {
    status = (await fetch(`${base}/api/v1/healthz`, { headers, signal: AbortSignal.timeout(5000) }))
      .status;
  } catch (error) {
    return { reachable: false, problem: `${base}/api/v1/healthz: ${(error as Error).message}` };
  }
  try {
    const res = await fetch(`${base}/api/v1/get_server_capabilities`, {
      headers,
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) return { reachable: true, status };
    const body = (await res.json()) as { supported_models?: Array<{ model_name?: unknown }> };
    const models = (body.supported_models ?? [])
      .map((m) => m.model_name)
      .filter((m): m is string => typeof m === 'string');
    return { reachable: true, status, models };
  } catch {
    return { reachable: true, status };
  }
}
