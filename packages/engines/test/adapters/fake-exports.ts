// Sampler exports as each trainer backend writes them, with real safetensors files whose tensor
// keys and adapter_config.json are the backend's (the tensor values are zeros: only names, shapes
// and configs are read). Upstream read:
// - SkyRL JAX (NovaSky-AI/SkyRL@a9564572e skyrl/tx/utils/models.py `save_lora_checkpoint`):
//   `peft.LoraConfig(base_model_name_or_path, r=rank, lora_alpha=alpha)` saved as is, so
//   `target_modules` is null; alpha is 32 at every rank (skyrl/tinker/api.py `create_model`);
//   keys `base_model.model.` + the module path + `.lora_A.weight`; expert tensors are written
//   per expert by `get_expert_key` — `model.layers.L.mlp.experts.E.<proj>.lora_A`, without the
//   prefix and `.weight` — padded to the full rank although training used
//   rank // num_experts (skyrl/tx/layers/lora.py `init_lora_adapter`).
// - SkyRL FSDP (skyrl_train_backend.py `save_sampler_checkpoint` -> fsdp_strategy.py
//   `save_hf_model` -> `PeftModel.save_pretrained`): a PEFT adapter (`target_modules` the list
//   PEFT resolved, the configured alpha) plus config.json and the tokenizer files.
// - Hosted Tinker (closed service; thinking-machines-lab/tinker@d595dc2b
//   cli/commands/checkpoint.py: adapter_config.json + adapter_model.safetensors +
//   `checkpoint_complete`; tinker-cookbook@9dfcc3a2 weights/_merge_utils.py `build_name_remaps`:
//   keys carry `base_model.model.` and the unembedding is `model.unembed_tokens`, trained unless
//   `lora_config.train_unembed` is false).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { safetensorsBytes } from '../tinker/fake-archive.ts';

/** A safetensors file of zero F32 tensors with these names and shapes. */
export const safetensors = (tensors: Record<string, number[]>): Buffer => safetensorsBytes(tensors);

const HIDDEN = 8;
const ATTN = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
const MLP = ['gate_proj', 'up_proj', 'down_proj'];

export interface ExportShape {
  rank: number;
  layers?: number;
  /** MoE: experts per layer (Qwen3-30B-A3B: 128); dense MLP when absent. */
  experts?: number;
}

function lora(tensors: Record<string, number[]>, key: string, rank: number, suffix = '.weight') {
  tensors[`${key}.lora_A${suffix}`] = [rank, HIDDEN];
  tensors[`${key}.lora_B${suffix}`] = [HIDDEN, rank];
}

/** Attention and MLP (or expert) LoRA tensors in the PEFT key layout. */
function layerTensors(
  shape: ExportShape,
  expertKeys: 'peft' | 'skyrl-jax',
): Record<string, number[]> {
  const tensors: Record<string, number[]> = {};
  for (let l = 0; l < (shape.layers ?? 2); l++) {
    const layer = `model.layers.${l}`;
    for (const m of ATTN) lora(tensors, `base_model.model.${layer}.self_attn.${m}`, shape.rank);
    if (shape.experts === undefined) {
      for (const m of MLP) lora(tensors, `base_model.model.${layer}.mlp.${m}`, shape.rank);
      continue;
    }
    for (let e = 0; e < shape.experts; e++) {
      for (const m of MLP) {
        if (expertKeys === 'skyrl-jax')
          lora(tensors, `${layer}.mlp.experts.${e}.${m}`, shape.rank, '');
        else lora(tensors, `base_model.model.${layer}.mlp.experts.${e}.${m}`, shape.rank);
      }
    }
  }
  return tensors;
}

const BASE = 'Qwen/Qwen3-8B';

function writeAdapter(dir: string, config: object, tensors: Record<string, number[]>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify(config));
  writeFileSync(join(dir, 'adapter_model.safetensors'), safetensors(tensors));
}

export function skyrlJaxExport(dir: string, shape: ExportShape): void {
  writeAdapter(
    dir,
    {
      base_model_name_or_path: BASE,
      peft_type: 'LORA',
      task_type: null,
      r: shape.rank,
      lora_alpha: 32,
      target_modules: null,
      lora_dropout: 0,
      bias: 'none',
    },
    layerTensors(shape, 'skyrl-jax'),
  );
}

export function skyrlFsdpExport(dir: string, shape: ExportShape & { alpha: number }): void {
  writeAdapter(
    dir,
    {
      base_model_name_or_path: BASE,
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: shape.rank,
      lora_alpha: shape.alpha,
      // PEFT saves the target set it resolved (`all-linear` -> the linear layers), as a list
      target_modules: [...MLP, ...ATTN].reverse(),
      bias: 'none',
    },
    layerTensors(shape, 'peft'),
  );
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'qwen3' }));
  writeFileSync(join(dir, 'tokenizer.json'), '{}');
  writeFileSync(join(dir, 'tokenizer_config.json'), '{}');
}

export function hostedTinkerExport(
  dir: string,
  shape: ExportShape & { unembed: boolean; complete?: boolean },
): void {
  const tensors = layerTensors(shape, 'peft');
  if (shape.unembed) lora(tensors, 'base_model.model.model.unembed_tokens', shape.rank);
  writeAdapter(
    dir,
    { base_model_name_or_path: BASE, peft_type: 'LORA', r: shape.rank, lora_alpha: 32 },
    tensors,
  );
  if (shape.complete ?? true) writeFileSync(join(dir, 'checkpoint_complete'), '');
}
