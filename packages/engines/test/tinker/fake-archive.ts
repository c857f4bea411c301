// Sampler-export archives for the fake trainer: a real `.tar.gz` holding a PEFT-style LoRA
// adapter (adapter_config.json with the model's rank, a stand-in adapter_model.safetensors),
// as SkyRL's JAX backend writes one (skyrl/backends/jax.py save_sampler_checkpoint -> a tarball
// of the adapter directory), so a download can be unpacked and classified end to end.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';

export function fakeAdapterArchive(modelId: string, name: string, rank: number): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'fake-tinker-archive-'));
  try {
    writeFileSync(
      join(dir, 'adapter_config.json'),
      JSON.stringify({ peft_type: 'LORA', r: rank, lora_alpha: rank, target_modules: ['q_proj'] }),
    );
    writeFileSync(join(dir, 'adapter_model.safetensors'), `weights of ${modelId}/${name}\n`);
    const file = join(dir, 'archive.tar.gz');
    create({ gzip: true, sync: true, cwd: dir, file, portable: true }, [
      'adapter_config.json',
      'adapter_model.safetensors',
    ]);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
