// What a run does with a vLLM replica's LoRA support, done once with a scratch adapter so that a
// passing check means a run will work: load it under a scratch name, sample one token from it,
// unload it. Route existence alone proves nothing: with VLLM_ALLOW_RUNTIME_LORA_UPDATING set and
// no --enable-lora the routes exist and an unload of an unknown name answers vLLM's own 404, but
// every load fails in the engine ("LoRA is not enabled.").
//
// The scratch adapter is a PEFT directory with a rank-1 `adapter_config.json` and an
// `adapter_model.safetensors` holding no tensors: vLLM checks the tensors it finds against the
// model's modules (vllm/lora/lora_model.py), so an adapter with none loads on any base model and
// changes nothing.
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { writeScratchExport } from '../embedded/scratch-export.ts';
import { readVllmError } from './errors.ts';

export interface LoraStep {
  ok: boolean;
  detail: string;
}

/** The steps run on one replica; a step is absent when an earlier one made it pointless. */
export interface LoraExercise {
  load: LoraStep;
  sample?: LoraStep;
  unload?: LoraStep;
}

export interface ScratchAdapter {
  path: string;
  /** Written under the endpoint's adapter root (else the system temp directory). */
  underAdapterRoot: boolean;
  remove(): Promise<void>;
}

/** A safetensors file with an empty header: 8-byte little-endian length, then the JSON header
 * (padded with spaces to a multiple of 8, as the format allows). */
function emptySafetensors(): Buffer {
  let header = JSON.stringify({ __metadata__: { format: 'pt' } });
  header += ' '.repeat((8 - (header.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([length, Buffer.from(header, 'utf8')]);
}

/** What the scratch adapter is: a PEFT LoRA adapter (vLLM), or an ONNX export of a tiny embedded
 * model for the embedded sampler server, which loads nothing else (docs/engines.md "Embedded
 * sampler server"). */
export type ScratchKind = 'lora' | 'onnx';

export async function writeScratchAdapter(
  adapterRoot: string | undefined,
  baseModel: string | undefined,
  kind: ScratchKind = 'lora',
): Promise<ScratchAdapter> {
  const path = join(adapterRoot ?? tmpdir(), `.anneal-check-${randomBytes(6).toString('hex')}`);
  await mkdir(path); // not recursive: a missing adapter root is reported, never created
  const scratch = {
    path,
    underAdapterRoot: adapterRoot !== undefined,
    remove: () => rm(path, { recursive: true, force: true }),
  };
  if (kind === 'onnx') {
    await writeScratchExport(path);
    return scratch;
  }
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    r: 1,
    lora_alpha: 1,
    lora_dropout: 0,
    bias: 'none',
    target_modules: ['q_proj'],
    ...(baseModel !== undefined && { base_model_name_or_path: baseModel }),
  };
  await writeFile(join(path, 'adapter_config.json'), JSON.stringify(config, null, 2));
  await writeFile(join(path, 'adapter_model.safetensors'), emptySafetensors());
  return scratch;
}

export type ReplicaCall = (route: string, body: unknown) => Promise<HttpReply | string>;

/** Load, sample, unload `adapter` on one replica through `call` (a reply, or the transport
 * error's message). */
export async function exerciseLora(
  call: ReplicaCall,
  adapter: ScratchAdapter,
): Promise<LoraExercise> {
  const name = `anneal-check-${randomBytes(6).toString('hex')}`;
  const loaded = await call('/v1/load_lora_adapter', { lora_name: name, lora_path: adapter.path });
  const load = loadStep(loaded, adapter);
  if (!load.ok) return { load };
  const sampled = await call('/v1/completions', {
    model: name,
    prompt: [1],
    max_tokens: 1,
    temperature: 0,
    logprobs: 0,
  });
  const sample = sampleStep(sampled, name);
  const unloaded = await call('/v1/unload_lora_adapter', { lora_name: name });
  const unload =
    typeof unloaded === 'string'
      ? { ok: false, detail: `unload of '${name}' failed: ${unloaded}` }
      : unloaded.status === 200
        ? { ok: true, detail: `unloaded '${name}'` }
        : { ok: false, detail: `unload of '${name}' answered ${describe(unloaded)}` };
  return { load, sample, unload };
}

function loadStep(reply: HttpReply | string, adapter: ScratchAdapter): LoraStep {
  if (typeof reply === 'string') return { ok: false, detail: `load failed: ${reply}` };
  if (reply.status === 200)
    return { ok: true, detail: `loaded a scratch adapter from ${adapter.path}` };
  if (reply.status === 404 && isObject(reply.json) && reply.json['detail'] === 'Not Found') {
    return {
      ok: false,
      detail:
        'the runtime LoRA routes are missing: start vLLM with --enable-lora and ' +
        'VLLM_ALLOW_RUNTIME_LORA_UPDATING=True',
    };
  }
  const { message } = readVllmError(reply);
  if (/LoRA is not enabled/i.test(message)) {
    return {
      ok: false,
      detail:
        `load answered ${describe(reply)}: VLLM_ALLOW_RUNTIME_LORA_UPDATING is set but LoRA is ` +
        'not: start vLLM with --enable-lora',
    };
  }
  if (/No adapter found/i.test(message)) {
    const where = adapter.underAdapterRoot
      ? 'mount the endpoint adapters.root at the same path on every replica'
      : 'set the endpoint adapters.root to a directory every replica mounts at the same path';
    return { ok: false, detail: `the replica cannot read ${adapter.path} (${message}): ${where}` };
  }
  return { ok: false, detail: `load answered ${describe(reply)}` };
}

function sampleStep(reply: HttpReply | string, name: string): LoraStep {
  if (typeof reply === 'string')
    return { ok: false, detail: `sampling '${name}' failed: ${reply}` };
  const choices = isObject(reply.json) ? reply.json['choices'] : undefined;
  if (reply.status === 200 && Array.isArray(choices) && choices.length === 1) {
    return { ok: true, detail: `sampled one token from '${name}'` };
  }
  return {
    ok: false,
    detail:
      reply.status === 200
        ? `sampling '${name}' answered 200 without one choice`
        : `sampling '${name}' answered ${describe(reply)}`,
  };
}

function describe(reply: HttpReply): string {
  const { message } = readVllmError(reply);
  return message ? `${reply.status}: ${message}` : String(reply.status);
}
