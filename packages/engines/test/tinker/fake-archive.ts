// Sampler-export archives for the fake trainer: a real `.tar.gz` holding a PEFT-style LoRA
// adapter — adapter_config.json with the model's rank and a real adapter_model.safetensors (zero
// tensors under PEFT keys; the header's metadata names the model and export) — as SkyRL's JAX
// backend writes one (skyrl/backends/jax.py save_sampler_checkpoint -> a tarball of the adapter
// directory). The hosted Tinker flavour adds what its archives hold (tinker SDK@d595dc2b
// cli/commands/checkpoint.py: `checkpoint_complete`) and, unless the model was created with
// `train_unembed: false` (types/lora_config.py default true), the unembedding's LoRA under
// Tinker's own name `model.unembed_tokens` (tinker-cookbook@9dfcc3a2 weights/_merge_utils.py
// `build_name_remaps`), which vLLM refuses until it is converted.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';
import type { LoraConfig } from '../../src/tinker/wire.ts';

/** A safetensors file of zero F32 tensors with these names and shapes. */
export function safetensorsBytes(
  tensors: Record<string, number[]>,
  metadata: Record<string, string> = {},
): Buffer {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const [name, shape] of Object.entries(tensors)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([size, json, Buffer.alloc(offset)]);
}

export function fakeAdapterArchive(
  modelId: string,
  name: string,
  lora: LoraConfig,
  options: { hosted?: boolean } = {},
): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'fake-tinker-archive-'));
  const rank = lora.rank;
  try {
    const tensors: Record<string, number[]> = {};
    const add = (module: string) => {
      tensors[`base_model.model.${module}.lora_A.weight`] = [rank, 8];
      tensors[`base_model.model.${module}.lora_B.weight`] = [8, rank];
    };
    add('model.layers.0.self_attn.q_proj');
    if (options.hosted && lora.train_unembed !== false) add('model.unembed_tokens');
    // SkyRL JAX: peft.LoraConfig(base_model_name_or_path, r, lora_alpha=32) saved as is
    // (skyrl/tx/utils/models.py@a9564572e save_lora_checkpoint): target_modules null. Hosted
    // Tinker's config is not documented; the cookbook reads only r and lora_alpha from it.
    writeFileSync(
      join(dir, 'adapter_config.json'),
      JSON.stringify(
        options.hosted
          ? { peft_type: 'LORA', r: rank, lora_alpha: 32 }
          : { peft_type: 'LORA', r: rank, lora_alpha: 32, target_modules: null },
      ),
    );
    writeFileSync(
      join(dir, 'adapter_model.safetensors'),
      safetensorsBytes(tensors, { anneal_fake: `weights of ${modelId}/${name}` }),
    );
    const files = ['adapter_config.json', 'adapter_model.safetensors'];
    if (options.hosted) {
      writeFileSync(join(dir, 'checkpoint_complete'), '');
      files.push('checkpoint_complete');
    }
    const file = join(dir, 'archive.tar.gz');
    create({ gzip: true, sync: true, cwd: dir, file, portable: true }, files);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
