// The ids vLLM ends a request at whatever the request's `stop_token_ids` say: the tokenizer's
// eos (tokenizer_config.json `eos_token`) and every id of generation_config.json `eos_token_id`
// (an id or a list), which `SamplingParams.update_from_generation_config` adds to the stop set
// (vllm/sampling_params.py@db573835). Qwen3's generation_config.json lists [<|im_end|>,
// <|endoftext|>], so a served Qwen3 turn can end in either; a rollout must read both as ends.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Tokenizer } from '../types.ts';
import { TokenizerConfigError } from './hf-config.ts';

function readJson(path: string): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new TokenizerConfigError(`cannot read ${path}: ${String(error)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new TokenizerConfigError(`${path}: not JSON: ${String(error)}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new TokenizerConfigError(`${path}: expected a JSON object`);
  }
  return json as Record<string, unknown>;
}

/** Text of a tokenizer_config.json special token (a string or `{content}`). */
const tokenText = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : typeof value === 'object' && value !== null && 'content' in value
      ? String((value as { content: unknown }).content)
      : undefined;

/**
 * The model's own stop ids, read from its directory (the one holding tokenizer.json): the
 * tokenizer_config.json `eos_token` and generation_config.json `eos_token_id`, in that order,
 * without repeats. A missing file contributes nothing; an id the tokenizer does not know, or an
 * eos text that is not one of its added tokens, is an error naming the file and field.
 */
export function readModelStopIds(dir: string, tokenizer: Tokenizer): number[] {
  const ids: number[] = [];
  const config = readJson(join(dir, 'tokenizer_config.json'));
  const eos = tokenText(config?.['eos_token']);
  if (eos !== undefined) {
    const id = tokenizer.specialTokenId(eos);
    if (id === undefined) {
      throw new TokenizerConfigError(
        `${join(dir, 'tokenizer_config.json')} eos_token: '${eos}' is not an added token`,
      );
    }
    ids.push(id);
  }
  const generation = readJson(join(dir, 'generation_config.json'));
  const listed = generation?.['eos_token_id'];
  if (listed !== undefined && listed !== null) {
    const field = `${join(dir, 'generation_config.json')} eos_token_id`;
    const list = Array.isArray(listed) ? listed : [listed];
    for (const id of list) {
      if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= tokenizer.vocabSize) {
        throw new TokenizerConfigError(`${field}: ${JSON.stringify(id)} is not a token id`);
      }
      ids.push(id as number);
    }
  }
  return [...new Set(ids)];
}
