// `anneal endpoints check` against servers that answer like the real ones: the faithful vLLM fake
// in both generations and with either --logprobs-mode, and the SkyRL flavour of the Tinker fake.
// The real CLI process is run once (table, exit code); the findings are checked in detail
// through checkEndpoints with the same probes the command uses.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logprobsModeMismatch, probeLogprobsMode, probeVllmEndpoint } from '@anneal/engines';
import { FakeTinkerServer, FakeVllmServer } from '@anneal/engines/testing';
import { type OperatorConfig, parseOperatorConfig } from '@anneal/protocol';
import {
  type CheckRow,
  checkEndpoints,
  checkExitCode,
  probeTinkerServer,
} from '../src/endpoints/check.ts';
import { anneal } from './cli-process.ts';

let dir: string;
let current: FakeVllmServer;
let old: FakeVllmServer;
let skyrl: FakeTinkerServer;
let configFile: string;
let operator: OperatorConfig;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-endpoints-'));
  current = await FakeVllmServer.start({
    generation: 'current',
    servedModel: 'qwen3',
    maxModelLen: 32_768,
    logprobsMode: 'processed_logprobs',
  });
  old = await FakeVllmServer.start({ generation: 'v0.11', servedModel: 'qwen3' }); // raw logprobs
  skyrl = await FakeTinkerServer.start({ flavor: 'skyrl' });
  const text = `
pools: { default: {} }
inference:
  fresh:
    type: vllm
    replicas: ["${current.url}"]
    servedModel: qwen3
    logprobsMode: processed_logprobs
    adapters: { root: "${dir}" }
  stale:
    type: vllm
    replicas: ["${old.url}", "http://127.0.0.1:9"]
    servedModel: qwen3
    logprobsMode: processed_logprobs
trainers:
  fsdp:
    type: tinker
    url: ${skyrl.url}
    backend: skyrl-fsdp
    capabilities: { kinds: [grpo], losses: [importance_sampling], reduction: sum }
baseModels:
  qwen: { model: Qwen/Qwen3-30B-A3B-Instruct-2507, tokenizer: byte }
defaults: { pool: default, inference: fresh, trainer: fsdp, baseModel: qwen }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'c'.repeat(64)}", role: operator, tenant: default }]
`;
  const parsed = parseOperatorConfig(text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  operator = parsed.value;
  configFile = path.join(dir, 'ops.yaml');
  await writeFile(configFile, text);
});
afterAll(async () => {
  await Promise.all([current.close(), old.close(), skyrl.close()]);
  await rm(dir, { recursive: true, force: true });
});

const probes = { probeVllmEndpoint, probeLogprobsMode, logprobsModeMismatch, probeTinkerServer };
const find = (rows: CheckRow[], endpoint: string, check: string, target?: string) =>
  rows.filter(
    (r) =>
      r.endpoint === endpoint && r.check === check && (target === undefined || r.target === target),
  );

describe('anneal endpoints check', () => {
  it('reports each replica, the logprobs mode as measured, adapter storage and trainer pairing', async () => {
    const rows = await checkEndpoints(operator, {}, probes);
    expect(find(rows, 'fresh', 'reachable')[0]?.status).toBe('ok');
    expect(find(rows, 'fresh', 'version')[0]?.detail).toBe('0.20.1');
    expect(find(rows, 'fresh', 'served model')[0]?.detail).toBe('qwen3, max_model_len 32768');
    expect(find(rows, 'fresh', 'load_inplace')[0]?.detail).toMatch(/^supported/);
    expect(find(rows, 'fresh', 'logprobs mode')[0]).toMatchObject({ status: 'ok' });
    expect(find(rows, 'fresh', 'logprobs mode')[0]?.detail).toMatch(
      /^processed_logprobs as declared/,
    );
    expect(find(rows, 'fresh', 'adapter directory')[0]?.status).toBe('ok');
    // The FSDP backend exports a LoRA adapter, but each sync runs its own inference engines.
    expect(find(rows, 'fresh', 'pairing with fsdp')[0]).toMatchObject({ status: 'fail' });
    expect(find(rows, 'fresh', 'pairing with fsdp')[0]?.detail).toContain(
      'own colocated inference engines',
    );

    expect(find(rows, 'stale', 'load_inplace', old.url)[0]?.detail).toMatch(/not supported/);
    expect(find(rows, 'stale', 'logprobs mode', old.url)[0]).toMatchObject({ status: 'fail' });
    expect(find(rows, 'stale', 'logprobs mode', old.url)[0]?.detail).toMatch(
      /declares logprobsMode processed_logprobs but its server reports raw_logprobs/,
    );
    expect(find(rows, 'stale', 'reachable', 'http://127.0.0.1:9')[0]?.status).toBe('fail');

    expect(find(rows, 'fsdp', 'reachable')[0]?.status).toBe('ok');
    expect(find(rows, 'fsdp', 'backend')[0]).toMatchObject({ status: 'ok' });
    expect(find(rows, 'fsdp', 'backend')[0]?.detail).toMatch(
      /sampler export lora \(after syncing its own inference engines\)/,
    );
  });

  it('refuses a declared reduction that contradicts the backend', async () => {
    const trainer = operator.trainers['fsdp']!;
    if (trainer.type !== 'tinker') throw new Error('tinker');
    const contradicting: OperatorConfig = {
      ...operator,
      inference: {},
      trainers: {
        fsdp: {
          ...trainer,
          capabilities: { ...trainer.capabilities, reduction: 'mean_per_sequence' },
        },
      },
    };
    const rows = await checkEndpoints(contradicting, {}, probes);
    expect(find(rows, 'fsdp', 'backend')[0]).toMatchObject({ status: 'fail' });
  });

  it('prints the table and exits 1 when a check fails (the real CLI process)', async () => {
    const result = await anneal(['endpoints', 'check', '--config', configFile]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ENDPOINT\s+TARGET\s+CHECK\s+RESULT\s+DETAIL/);
    expect(result.stdout).toMatch(/fresh .*logprobs mode\s+ok/);
    expect(result.stdout).toMatch(/stale .*logprobs mode\s+FAIL/);
    expect(result.stderr).toMatch(/checks failed/);
    const usage = await anneal(['endpoints', 'check'], { ANNEAL_CONFIG: '' });
    expect(usage.code).toBe(2);
  });
});

// Green must mean a run will work: each LoRA misconfiguration of the server fails the check
// (exit 1), and a correct server passes it without dev mode. Server behaviour per flag:
// vllm/entrypoints/serve/lora/api_router.py@b23bd73 (routes under
// VLLM_ALLOW_RUNTIME_LORA_UPDATING, no --enable-lora check), vllm/v1/worker/
// lora_model_runner_mixin.py@01d36ea0 ("LoRA is not enabled."), vllm/entrypoints/openai/
// api_server.py@0001948b (dev routes only under VLLM_SERVER_DEV_MODE).
describe('anneal endpoints check: runtime LoRA exercised as a run uses it', () => {
  type Flags = Parameters<typeof FakeVllmServer.start>[0];
  async function check(
    flags: Flags,
    script?: (fake: FakeVllmServer) => void,
    declared: { maxLoras?: number } = {},
  ) {
    const fake = await FakeVllmServer.start({
      servedModel: 'qwen3',
      logprobsMode: 'processed_logprobs',
      ...flags,
    });
    script?.(fake);
    const fresh = operator.inference['fresh']!;
    if (fresh.type !== 'vllm') throw new Error('vllm');
    const single: OperatorConfig = {
      ...operator,
      inference: { lone: { ...fresh, replicas: [fake.url], ...declared } },
      trainers: {},
    };
    try {
      const rows = await checkEndpoints(single, {}, probes);
      return { rows, fake, code: checkExitCode(rows) };
    } finally {
      await fake.close();
    }
  }
  const failing = (rows: CheckRow[]) =>
    rows.filter((r) => r.status === 'fail').map((r) => `${r.check}: ${r.detail}`);
  const fail500 = { kind: 'reply', status: 500, body: { error: { message: 'boom' } } } as const;

  it('passes a correct server with dev mode off, leaving nothing loaded or written', async () => {
    const { rows, fake, code } = await check({ devMode: false });
    expect(failing(rows)).toEqual([]);
    expect(code).toBe(0);
    for (const check of ['lora load', 'lora sample', 'lora unload', 'runtime LoRA']) {
      expect(find(rows, 'lone', check)[0]?.status).toBe('ok');
    }
    expect(fake.adapters.size).toBe(0);
    expect(fake.requests.map((r) => r.path)).not.toContain('/reset_prefix_cache');
  });

  // vllm/v1/metrics/loggers.py@a6f0308c: vllm:lora_requests_info{max_lora, running_lora_adapters,
  // waiting_lora_adapters}; vllm/config/lora.py@01230b40: max_cpu_loras defaults to max_loras.
  it('reads --max-loras from /metrics and warns when it cannot hold the runs of a worker', async () => {
    const two = await check({ maxLoras: 2 });
    expect(find(two.rows, 'lone', 'lora capacity')[0]).toMatchObject({ status: 'ok' });
    expect(find(two.rows, 'lone', 'lora capacity')[0]?.detail).toMatch(
      /^--max-loras 2 per batch \(1 run\(s\) at once need 2\).*re-read from disk/,
    );
    const one = await check({ maxLoras: 1 });
    expect(find(one.rows, 'lone', 'lora capacity')[0]).toMatchObject({ status: 'warn' });
    expect(find(one.rows, 'lone', 'lora capacity')[0]?.detail).toMatch(
      /--max-loras 1 holds fewer adapters per batch than the 2 of 1 run/,
    );
    const unknown = await check({});
    expect(find(unknown.rows, 'lone', 'lora capacity')[0]).toMatchObject({ status: 'warn' });
    expect(find(unknown.rows, 'lone', 'lora capacity')[0]?.detail).toMatch(/^not reported/);
  });

  it("fails when the declared maxLoras is not the server's --max-loras", async () => {
    const wrong = await check({ maxLoras: 4 }, undefined, { maxLoras: 8 });
    expect(wrong.code).toBe(1);
    expect(failing(wrong.rows)).toEqual([
      'declared maxLoras: the server runs --max-loras 4 but the operator config declares ' +
        'maxLoras 8: runs would be admitted against the wrong number of adapter slots; set ' +
        'maxLoras: 4, or restart vLLM with --max-loras 8',
    ]);
    const right = await check({ maxLoras: 4 }, undefined, { maxLoras: 4 });
    expect(right.code).toBe(0);
    expect(find(right.rows, 'lone', 'declared maxLoras')[0]).toMatchObject({ status: 'ok' });
    const unreported = await check({}, undefined, { maxLoras: 4 });
    expect(find(unreported.rows, 'lone', 'declared maxLoras')[0]).toMatchObject({
      status: 'warn',
    });
  });

  it('fails runtime LoRA updating without --enable-lora (the routes exist, loads fail)', async () => {
    const { rows, code } = await check({ runtimeLoraUpdating: true, enableLora: false });
    expect(code).toBe(1);
    expect(find(rows, 'lone', 'lora load')[0]).toMatchObject({ status: 'fail' });
    expect(find(rows, 'lone', 'lora load')[0]?.detail).toMatch(
      /LoRA is not enabled.*start vLLM with --enable-lora$/,
    );
    expect(find(rows, 'lone', 'runtime LoRA')[0]?.status).toBe('fail');
  });

  it('fails when the LoRA routes are missing', async () => {
    const { rows, code } = await check({ runtimeLoraUpdating: false });
    expect(code).toBe(1);
    expect(find(rows, 'lone', 'lora load')[0]?.detail).toMatch(/runtime LoRA routes are missing/);
  });

  it('fails when sampling from the scratch adapter fails', async () => {
    const { rows, code, fake } = await check({}, (f) => f.enqueue('/v1/completions', fail500));
    expect(code).toBe(1);
    expect(find(rows, 'lone', 'lora sample')[0]).toMatchObject({ status: 'fail' });
    expect(find(rows, 'lone', 'lora sample')[0]?.detail).toMatch(/answered 500: boom/);
    expect(find(rows, 'lone', 'lora unload')[0]?.status).toBe('ok'); // cleaned up all the same
    expect(fake.adapters.size).toBe(0);
  });

  it('fails when unloading the scratch adapter fails', async () => {
    const { rows, code } = await check({}, (f) => f.enqueue('/v1/unload_lora_adapter', fail500));
    expect(code).toBe(1);
    expect(find(rows, 'lone', 'lora unload')[0]).toMatchObject({ status: 'fail' });
    expect(find(rows, 'lone', 'lora sample')[0]?.status).toBe('ok');
  });
});

describe('endpoints check of the embedded sampler server', () => {
  it('exercises it with an ONNX export, reads its max_lora, and fails a declared server that is not the one answering', async () => {
    const { EmbeddedSamplerServer } = await import('@anneal/engines');
    const sampler = new EmbeddedSamplerServer({
      servedModel: 'tiny',
      maxLoras: 2,
      engine: { threads: 1 },
    });
    const url = await sampler.listen();
    try {
      const config = (server: string) => {
        const parsed = parseOperatorConfig(`
pools: { default: {} }
inference:
  shared: { type: vllm, server: ${server}, replicas: ["${url}"], servedModel: tiny, maxLoras: 2, logprobsMode: processed_logprobs }
trainers:
  embedded: { type: tinker, url: "http://127.0.0.1:9", backend: embedded, capabilities: { kinds: [grpo], losses: [importance_sampling], reduction: sum } }
baseModels: { tiny: { model: anneal-tiny, tokenizer: byte } }
defaults: { pool: default, inference: shared, trainer: embedded, baseModel: tiny }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'c'.repeat(64)}", role: operator, tenant: default }]
`);
        if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
        return parsed.value;
      };
      const rows = await checkEndpoints(config('anneal-embedded'), {}, probes);
      const status = (check: string) => find(rows, 'shared', check).map((r) => r.status);
      for (const check of ['server', 'lora load', 'lora sample', 'lora unload', 'runtime LoRA'])
        expect(status(check), check).toEqual(['ok']);
      expect(status('declared maxLoras')).toEqual(['ok']);
      expect(find(rows, 'shared', 'pairing with embedded')[0]).toMatchObject({
        status: 'ok',
        detail: 'ONNX exports load as weight sets on the embedded sampler server',
      });
      const asVllm = await checkEndpoints(config('vllm'), {}, probes);
      expect(find(asVllm, 'shared', 'server')[0]).toMatchObject({ status: 'fail' });
      expect(find(asVllm, 'shared', 'server')[0]?.detail).toMatch(
        /^declared server: vllm, but the replica is anneal-embedded/,
      );
      expect(find(asVllm, 'shared', 'pairing with embedded')[0]?.status).toBe('fail');
    } finally {
      await sampler.close();
    }
  }, 60_000);
});
