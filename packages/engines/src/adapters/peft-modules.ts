// What a LoRA adapter's tensors adapt, read from adapter_model.safetensors' header, and the
// rules the two readers of an adapter apply to it (docs/engines.md "Adapters: what the tensors
// adapt"):
// - vLLM goes by the weight keys (vllm/lora/lora_model.py@532cc258 `from_local_checkpoint`
//   `check_unexpected_modules`): every key's module (after `base_model.model.`) must end in a
//   module the base model can adapt, else the load fails "expected target modules in …";
//   adapter_config.json's `target_modules` is not consulted for a .safetensors file. Its scale is
//   one `lora_alpha / r` for every module (vllm/lora/peft_helper.py@e745baff `PEFTHelper`).
// - PEFT (`PeftModel.from_pretrained`) injects LoRA only into the modules `target_modules` names
//   (a list: a module whose name is, or ends in `.` + , an entry; a string: a regex full match;
//   null: the default list for the model type — Qwen3: q_proj, v_proj, peft
//   src/peft/utils/constants.py@4cbf6e9b) and drops the tensors of every other module.
// So an export states `target_modules` from its keys, and both readers see every module.
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AdapterError } from './errors.ts';

/** Leaf modules vLLM can adapt in a Qwen2/Qwen3 (dense and MoE) model: the linear layers and
 * the members of its packed qkv_proj / gate_up_proj, plus the MoE `experts`. */
export const QWEN3_LORA_MODULES: readonly string[] = [
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'gate_proj',
  'up_proj',
  'down_proj',
  'experts',
];

/** peft's default `target_modules` for Qwen2/Qwen3 (and their MoE variants). */
export const PEFT_DEFAULT_QWEN3_TARGETS: readonly string[] = ['q_proj', 'v_proj'];

const PREFIX = 'base_model.model.';
const LORA_KEY = /^(.*)\.(lora_A|lora_B|lora_embedding_A|lora_embedding_B)(?:\.weight)?$/;

export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
}

/** The tensor table of a .safetensors file (its JSON header; the data is not read). */
export async function readSafetensorsHeader(file: string): Promise<Map<string, SafetensorsEntry>> {
  const handle = await open(file, 'r');
  try {
    const size = Buffer.alloc(8);
    await handle.read(size, 0, 8, 0);
    const length = Number(size.readBigUInt64LE(0));
    if (length <= 0 || length > 100 * 1024 * 1024) {
      throw new AdapterError('bad-config', file, `has a header of ${length} bytes`);
    }
    const header = Buffer.alloc(length);
    await handle.read(header, 0, length, 8);
    const json = JSON.parse(header.toString('utf8')) as Record<string, unknown>;
    const table = new Map<string, SafetensorsEntry>();
    for (const [name, value] of Object.entries(json)) {
      if (name === '__metadata__') continue;
      const entry = value as { dtype?: unknown; shape?: unknown };
      table.set(name, { dtype: String(entry.dtype), shape: (entry.shape ?? []) as number[] });
    }
    return table;
  } catch (error) {
    if (error instanceof AdapterError) throw error;
    throw new AdapterError('bad-config', file, 'is not a readable safetensors file', error);
  } finally {
    await handle.close();
  }
}

/** The module a LoRA tensor key adapts (`model.layers.0.self_attn.q_proj`), or undefined for a
 * key that is not a LoRA weight. */
export function loraModuleOf(key: string): string | undefined {
  const match = LORA_KEY.exec(key);
  if (!match) return undefined;
  const module = match[1] as string;
  return module.startsWith(PREFIX) ? module.slice(PREFIX.length) : module;
}

/** The leaf name vLLM checks: the name after `.experts` for an expert module (`experts…`), else
 * the last component. */
export function servingLeafOf(module: string): string {
  const experts = module.indexOf('.experts');
  if (experts >= 0) return 'experts';
  return module.slice(module.lastIndexOf('.') + 1);
}

export interface AdapterModules {
  /** Every adapted module, sorted. */
  modules: string[];
  /** The leaf names, sorted: what `target_modules` must list. */
  targetModules: string[];
  /** Modules the base model cannot adapt (vLLM refuses the adapter for them). */
  unservable: string[];
  /** Whether MoE expert modules are adapted. */
  experts: boolean;
}

/** The scales of an expert delta: as SkyRL JAX trains it (alpha / max(1, rank // experts),
 * skyrl/tx/layers/lora.py@a9564572e `init_lora_adapter`) and as vLLM serves it (alpha / rank,
 * vllm/lora/peft_helper.py@e745baff `vllm_lora_scaling_factor`, one factor per adapter). */
export function skyrlExpertScales(
  rank: number,
  alpha: number,
  experts: number,
): { trained: number; served: number } {
  return { trained: alpha / Math.max(1, Math.floor(rank / experts)), served: alpha / rank };
}

/** What the tensor keys adapt, against the base model's adaptable leaf modules. */
export function adapterModules(
  keys: Iterable<string>,
  lorable: readonly string[] = QWEN3_LORA_MODULES,
): AdapterModules {
  const modules = new Set<string>();
  for (const key of keys) {
    const module = loraModuleOf(key);
    if (module !== undefined) modules.add(module);
  }
  const sorted = [...modules].sort();
  const leaves = new Set(sorted.map((m) => m.slice(m.lastIndexOf('.') + 1)));
  return {
    modules: sorted,
    targetModules: [...leaves].sort(),
    unservable: sorted.filter((m) => !lorable.includes(servingLeafOf(m))),
    experts: sorted.some((m) => m.includes('.experts')),
  };
}

/** The modules PEFT injects LoRA into for this `target_modules`, among `modules` (peft
 * tuners/lora + tuners_utils `check_target_module_exists`). */
export function peftAdaptedModules(
  modules: readonly string[],
  targetModules: unknown,
  defaults: readonly string[] = PEFT_DEFAULT_QWEN3_TARGETS,
): string[] {
  if (typeof targetModules === 'string') {
    const pattern = new RegExp(`^(?:${targetModules})$`);
    return modules.filter((m) => pattern.test(m));
  }
  const list = Array.isArray(targetModules) ? (targetModules as string[]) : defaults;
  return modules.filter((m) => list.some((t) => m === t || m.endsWith(`.${t}`)));
}

/**
 * Rewrites `<dir>/adapter_config.json` so it states what `<dir>/adapter_model.safetensors`
 * adapts: `target_modules` from the keys; `r` and `lora_alpha` kept (they are what the trainer
 * scaled by). Returns the modules; refuses an adapter whose tensors adapt a module the base model
 * cannot (Hosted Tinker's `model.unembed_tokens`, an unconverted export).
 */
export async function stateAdapterTargets(
  dir: string,
  options: { lorable?: readonly string[]; backend?: string } = {},
): Promise<AdapterModules> {
  const lorable = options.lorable ?? QWEN3_LORA_MODULES;
  const tensors = await readSafetensorsHeader(join(dir, 'adapter_model.safetensors'));
  const found = adapterModules(tensors.keys(), lorable);
  const configFile = join(dir, 'adapter_config.json');
  if (found.modules.length === 0) {
    throw new AdapterError('bad-config', dir, 'adapter_model.safetensors holds no LoRA weights');
  }
  if (found.unservable.length > 0) {
    throw new AdapterError(
      'unservable-modules',
      dir,
      `adapts modules the base model has no LoRA for (${found.unservable.slice(0, 3).join(', ')}` +
        `${found.unservable.length > 3 ? ', …' : ''}; adaptable: ${lorable.join(', ')}): ` +
        'convert it first (tinker-cookbook weights.build_lora_adapter)',
    );
  }
  if (found.experts && options.backend === 'skyrl-jax') {
    throw new AdapterError(
      'unservable-modules',
      dir,
      'adapts MoE experts as SkyRL JAX trains them: at rank r // num_experts, scaled by ' +
        'lora_alpha / (r // num_experts) (skyrl/tx/layers/lora.py init_lora_adapter), while ' +
        'vLLM and PEFT scale every module by lora_alpha / r — the served experts would move ' +
        'r / max(1, r // num_experts) times less than trained (Qwen3-30B-A3B at r 32: 32x). ' +
        'Train with lora_config.train_mlp false, or on another backend (docs/engines.md ' +
        '"Adapters: what the tensors adapt")',
    );
  }
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new AdapterError('bad-config', configFile, 'is not readable JSON', error);
  }
  config['target_modules'] = found.targetModules;
  await writeFile(configFile, `${JSON.stringify(config, null, 2)}\n`);
  return found;
}
