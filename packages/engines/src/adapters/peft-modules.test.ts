// An exported adapter must load as it was trained, through both of its readers:
// - PEFT (`PeftModel.from_pretrained`): LoRA goes only into the modules adapter_config.json's
//   `target_modules` names (huggingface/peft src/peft/tuners/tuners_utils.py
//   `check_target_module_exists`: list = name or `.name` suffix, string = regex full match; null
//   = the model type's default, src/peft/utils/constants.py@4cbf6e9b — qwen3: q_proj, v_proj);
// - vLLM (vllm/lora/lora_model.py@532cc258 `check_unexpected_modules`): the safetensors keys
//   decide; a module the model cannot adapt fails the load. The fake vLLM applies that rule.
// The exports are each backend's layout (test/adapters/fake-exports.ts, upstream cited there).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hostedTinkerExport,
  skyrlFsdpExport,
  skyrlJaxExport,
} from '../../test/adapters/fake-exports.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import { AdapterError } from './errors.ts';
import { classify } from './prepare.ts';
import {
  adapterModules,
  peftAdaptedModules,
  readSafetensorsHeader,
  skyrlExpertScales,
  stateAdapterTargets,
} from './peft-modules.ts';

let root: string;
let vllm: FakeVllmServer;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'anneal-peft-'));
  vllm = await FakeVllmServer.start({ maxLoraRank: 64 });
});
afterAll(async () => {
  await vllm.stop();
  await rm(root, { recursive: true, force: true });
});

const config = async (dir: string) =>
  JSON.parse(await readFile(join(dir, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
const modulesOf = async (dir: string) =>
  adapterModules((await readSafetensorsHeader(join(dir, 'adapter_model.safetensors'))).keys())
    .modules;

async function loadIntoVllm(name: string, dir: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${vllm.url}/v1/load_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lora_name: name, lora_path: dir }),
  });
  return { status: response.status, text: await response.text() };
}

describe('exported adapters state what their tensors adapt', () => {
  const exports: [string, (dir: string) => void][] = [
    ['skyrl-jax', (dir) => skyrlJaxExport(dir, { rank: 32 })],
    ['skyrl-fsdp', (dir) => skyrlFsdpExport(dir, { rank: 32, alpha: 64 })],
    [
      'hosted tinker (train_unembed false)',
      (dir) => hostedTinkerExport(dir, { rank: 32, unembed: false }),
    ],
  ];

  it.each(exports)('%s: PEFT and vLLM both see every module', async (backend, write) => {
    const dir = join(root, backend.replace(/\W+/g, '-'));
    write(dir);
    const modules = await modulesOf(dir);
    expect(modules).toHaveLength(2 * 7); // 2 layers x q, k, v, o, gate, up, down
    const { r, lora_alpha } = await config(dir);
    const found = await stateAdapterTargets(dir);
    const stated = await config(dir);
    expect(stated['target_modules']).toEqual([
      'down_proj',
      'gate_proj',
      'k_proj',
      'o_proj',
      'q_proj',
      'up_proj',
      'v_proj',
    ]);
    expect([stated['r'], stated['lora_alpha']]).toEqual([r, lora_alpha]); // the trained scale
    expect(found.modules).toEqual(modules);
    expect(peftAdaptedModules(modules, stated['target_modules'])).toEqual(modules);
    const loaded = await loadIntoVllm(`a-${backend}`.replace(/\W+/g, '-'), dir);
    expect(loaded.status).toBe(200);
    expect(vllm.adapterTensorModules.get(dir)).toEqual(modules);
  });

  it("SkyRL FSDP's export (a PEFT adapter beside config.json and the tokenizer) classifies as a LoRA adapter", async () => {
    const dir = join(root, 'fsdp-classify');
    skyrlFsdpExport(dir, { rank: 16, alpha: 32 });
    expect(await classify(dir)).toEqual({ kind: 'lora', rank: 16 });
  });

  it("SkyRL JAX's own config (target_modules null) makes PEFT drop 5 of the 7 modules", async () => {
    const dir = join(root, 'jax-raw');
    skyrlJaxExport(dir, { rank: 8 });
    const raw = await config(dir);
    expect(raw['target_modules']).toBeNull();
    expect(raw['lora_alpha']).toBe(32);
    const modules = await modulesOf(dir);
    const adapted = peftAdaptedModules(modules, raw['target_modules']);
    expect(adapted.map((m) => m.split('.').at(-1))).toEqual([
      'q_proj',
      'v_proj',
      'q_proj',
      'v_proj',
    ]);
  });

  it('hosted Tinker with its default train_unembed: vLLM refuses model.unembed_tokens, and so does the export', async () => {
    const dir = join(root, 'tinker-unembed');
    hostedTinkerExport(dir, { rank: 8, unembed: true });
    const loaded = await loadIntoVllm('unembed', dir);
    expect(loaded.status).toBe(500);
    expect(loaded.text).toContain('expected target modules in');
    expect(loaded.text).toContain('model.unembed_tokens');
    const error = (await stateAdapterTargets(dir).catch((e: unknown) => e)) as AdapterError;
    expect(error).toBeInstanceOf(AdapterError);
    expect(error.reason).toBe('unservable-modules');
    expect(error.message).toContain('model.unembed_tokens');
    expect(error.message).toContain('build_lora_adapter');
  });
});

describe('MoE expert LoRA (Qwen3-30B-A3B: 128 experts)', () => {
  it('SkyRL JAX trains experts at alpha / (r // E); vLLM serves alpha / r: 32x apart at r 32', () => {
    // skyrl/tx/layers/lora.py@a9564572e init_lora_adapter: effective_rank = max(1, r // E),
    // lora_scaling = alpha / effective_rank; vllm/lora/peft_helper.py@e745baff:
    // vllm_lora_scaling_factor = lora_alpha / r for every module of the adapter
    expect(skyrlExpertScales(32, 32, 128)).toEqual({ trained: 32, served: 1 });
    expect(skyrlExpertScales(256, 32, 128)).toEqual({ trained: 16, served: 0.125 });
    // a dense module of the same adapter is scaled alike by both: alpha / r
    expect(skyrlExpertScales(32, 32, 1)).toEqual({ trained: 1, served: 1 });
  });

  it('refuses a SkyRL JAX adapter with expert tensors, saying why', async () => {
    const dir = join(root, 'jax-moe');
    skyrlJaxExport(dir, { rank: 32, layers: 1, experts: 4 });
    const found = adapterModules(
      (await readSafetensorsHeader(join(dir, 'adapter_model.safetensors'))).keys(),
    );
    expect(found.experts).toBe(true);
    expect(found.unservable).toEqual([]);
    const error = (await stateAdapterTargets(dir, { backend: 'skyrl-jax' }).catch(
      (e: unknown) => e,
    )) as AdapterError;
    expect(error).toBeInstanceOf(AdapterError);
    expect(error.message).toContain('lora_alpha / (r // num_experts)');
    // the same tensors from a backend that scales experts by alpha / r are stated, not refused
    const fsdp = join(root, 'fsdp-moe');
    skyrlFsdpExport(fsdp, { rank: 32, alpha: 32, layers: 1, experts: 4 });
    expect((await stateAdapterTargets(fsdp, { backend: 'skyrl-fsdp' })).experts).toBe(true);
  });
});
