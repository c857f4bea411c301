// Reads a Hugging Face tokenizer.json into the tables of a byte-level BPE tokenizer, rejecting
// every feature this implementation does not reproduce exactly (the error names the field).
import { GPT2_SPLIT_PATTERN, toJsRegExp } from './byte-level.ts';

export interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

export interface HfBpeTables {
  vocab: Map<string, number>;
  /** "left right" -> merge rank (lower merges first). */
  ranks: Map<string, number>;
  added: AddedToken[];
  /** Applied to text before pre-tokenization. */
  normalization: 'NFC' | null;
  /** Applied in order; each splits every piece produced by the previous ones. */
  splits: RegExp[];
  /** `model.ignore_merges`: a whole pre-token found in the vocabulary is one token. */
  ignoreMerges: boolean;
  /** Ids the `post_processor` puts around a single sequence (TemplateProcessing: Llama-3's
   * `<|begin_of_text|>`); empty for Qwen2/Qwen3 (ByteLevel) and files without one. */
  specialPrefix: number[];
  specialSuffix: number[];
}

type Json = Record<string, unknown>;

export class TokenizerConfigError extends Error {
  override readonly name = 'TokenizerConfigError';
}

const fail = (field: string, message: string): never => {
  throw new TokenizerConfigError(`tokenizer.json ${field}: ${message}`);
};

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parse the `tokenizer.json` object (already JSON-decoded). */
export function parseHfTokenizer(json: unknown): HfBpeTables {
  if (!isObject(json)) return fail('(root)', 'expected a JSON object');
  const model = json['model'];
  if (!isObject(model)) return fail('model', 'missing');
  if (model['type'] !== 'BPE') {
    fail('model.type', `'${String(model['type'])}' is not supported (only byte-level 'BPE')`);
  }
  requireFalsy(model, 'dropout', 'model.dropout');
  requireFalsy(model, 'byte_fallback', 'model.byte_fallback');
  requireFalsy(model, 'continuing_subword_prefix', 'model.continuing_subword_prefix');
  requireFalsy(model, 'end_of_word_suffix', 'model.end_of_word_suffix');
  const decoder = json['decoder'];
  if (
    decoder !== undefined &&
    decoder !== null &&
    !(isObject(decoder) && decoder['type'] === 'ByteLevel')
  ) {
    const type = isObject(decoder) ? String(decoder['type']) : JSON.stringify(decoder);
    fail('decoder.type', `'${type}' is not supported (only null or ByteLevel)`);
  }
  return {
    vocab: parseVocab(model['vocab']),
    ranks: parseMerges(model['merges']),
    added: parseAdded(json['added_tokens']),
    normalization: parseNormalizer(json['normalizer']),
    splits: parsePreTokenizer(json['pre_tokenizer']),
    ignoreMerges: model['ignore_merges'] === true,
    ...parsePostProcessor(json['post_processor']),
  };
}

function requireFalsy(obj: Json, key: string, field: string): void {
  const value = obj[key];
  if (value !== undefined && value !== null && value !== false && value !== '') {
    fail(field, `${JSON.stringify(value)} is not supported`);
  }
}

function parseVocab(vocab: unknown): Map<string, number> {
  if (!isObject(vocab)) return fail('model.vocab', 'expected an object of token -> id');
  const table = new Map<string, number>();
  for (const [token, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      fail(`model.vocab["${token}"]`, `id ${JSON.stringify(id)} is not a non-negative integer`);
    }
    table.set(token, id as number);
  }
  return table;
}

function parseMerges(merges: unknown): Map<string, number> {
  if (!Array.isArray(merges)) return fail('model.merges', 'expected an array');
  const ranks = new Map<string, number>();
  merges.forEach((merge: unknown, rank) => {
    let pair: unknown[] | undefined;
    if (typeof merge === 'string') {
      const space = merge.indexOf(' ', 1);
      pair = space < 0 ? undefined : [merge.slice(0, space), merge.slice(space + 1)];
    } else if (Array.isArray(merge)) {
      pair = merge;
    }
    const [left, right] = pair ?? [];
    if (pair?.length !== 2 || typeof left !== 'string' || typeof right !== 'string') {
      return fail(
        `model.merges[${rank}]`,
        `expected "a b" or ["a", "b"], got ${JSON.stringify(merge)}`,
      );
    }
    const key = `${left} ${right}`;
    if (!ranks.has(key)) ranks.set(key, rank);
  });
  return ranks;
}

function parseAdded(added: unknown): AddedToken[] {
  if (added === undefined || added === null) return [];
  if (!Array.isArray(added)) return fail('added_tokens', 'expected an array');
  return added.map((token: unknown, i) => {
    const field = `added_tokens[${i}]`;
    if (!isObject(token)) return fail(field, 'expected an object');
    const { id, content } = token;
    if (!Number.isInteger(id) || (id as number) < 0) fail(`${field}.id`, 'expected an integer');
    if (typeof content !== 'string' || content.length === 0) {
      fail(`${field}.content`, 'expected a non-empty string');
    }
    return { id: id as number, content: content as string, special: token['special'] === true };
  });
}

function parseNormalizer(normalizer: unknown): 'NFC' | null {
  if (normalizer === undefined || normalizer === null) return null;
  if (isObject(normalizer) && normalizer['type'] === 'NFC') return 'NFC';
  const type = isObject(normalizer) ? String(normalizer['type']) : JSON.stringify(normalizer);
  return fail('normalizer', `'${type}' is not supported (only null or NFC)`);
}

function parsePreTokenizer(pre: unknown): RegExp[] {
  if (!isObject(pre)) return fail('pre_tokenizer', 'a ByteLevel pre-tokenizer is required');
  const steps =
    pre['type'] === 'Sequence' ? (pre['pretokenizers'] as unknown) : ([pre] as unknown[]);
  if (!Array.isArray(steps)) return fail('pre_tokenizer.pretokenizers', 'expected an array');
  const splits: RegExp[] = [];
  let byteLevel = false;
  steps.forEach((step: unknown, i) => {
    const field =
      pre['type'] === 'Sequence' ? `pre_tokenizer.pretokenizers[${i}]` : 'pre_tokenizer';
    if (!isObject(step)) return fail(field, 'expected an object');
    if (byteLevel) return fail(field, 'ByteLevel must be the last pre-tokenizer');
    if (step['type'] === 'Split') {
      splits.push(parseSplit(step, field));
    } else if (step['type'] === 'ByteLevel') {
      if (step['add_prefix_space'] === true) {
        fail(`${field}.add_prefix_space`, 'true is not supported (decode would not round-trip)');
      }
      if (step['use_regex'] !== false) splits.push(toJsRegExp(GPT2_SPLIT_PATTERN, field));
      byteLevel = true;
    } else {
      fail(`${field}.type`, `'${String(step['type'])}' is not supported (Split, ByteLevel)`);
    }
  });
  if (!byteLevel) fail('pre_tokenizer', 'a ByteLevel pre-tokenizer is required');
  return splits;
}

function parseSplit(step: Json, field: string): RegExp {
  if (step['behavior'] !== 'Isolated') {
    fail(`${field}.behavior`, `'${String(step['behavior'])}' is not supported (only Isolated)`);
  }
  if (step['invert'] === true) fail(`${field}.invert`, 'true is not supported');
  const pattern = step['pattern'];
  if (isObject(pattern) && typeof pattern['Regex'] === 'string') {
    return toJsRegExp(pattern['Regex'], `${field}.pattern.Regex`);
  }
  if (isObject(pattern) && typeof pattern['String'] === 'string') {
    return new RegExp(pattern['String'].replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gu');
  }
  return fail(`${field}.pattern`, 'expected { Regex } or { String }');
}

/**
 * `post_processor`: what the reference adds around one sequence when asked for special tokens.
 * ByteLevel only fixes offsets (no ids); TemplateProcessing's `single` template gives the ids
 * before and after `$A`; a Sequence combines them. Anything else is rejected by name.
 */
function parsePostProcessor(post: unknown): { specialPrefix: number[]; specialSuffix: number[] } {
  const out = { specialPrefix: [] as number[], specialSuffix: [] as number[] };
  if (post === undefined || post === null) return out;
  if (!isObject(post)) return fail('post_processor', 'expected an object');
  const steps = post['type'] === 'Sequence' ? post['processors'] : [post];
  if (!Array.isArray(steps)) return fail('post_processor.processors', 'expected an array');
  steps.forEach((step: unknown, i) => {
    const field =
      post['type'] === 'Sequence' ? `post_processor.processors[${i}]` : 'post_processor';
    if (!isObject(step)) return fail(field, 'expected an object');
    if (step['type'] === 'ByteLevel') return undefined;
    if (step['type'] !== 'TemplateProcessing') {
      return fail(
        `${field}.type`,
        `'${String(step['type'])}' is not supported (ByteLevel, TemplateProcessing)`,
      );
    }
    const template = parseSingleTemplate(step, field);
    out.specialPrefix.push(...template.prefix);
    out.specialSuffix.push(...template.suffix);
    return undefined;
  });
  return out;
}

function parseSingleTemplate(step: Json, field: string): { prefix: number[]; suffix: number[] } {
  const single = step['single'];
  const specials = step['special_tokens'];
  if (!Array.isArray(single)) return fail(`${field}.single`, 'expected an array');
  const prefix: number[] = [];
  const suffix: number[] = [];
  let seenA = false;
  single.forEach((piece: unknown, j) => {
    const at = `${field}.single[${j}]`;
    if (isObject(piece) && isObject(piece['Sequence'])) {
      if (piece['Sequence']['id'] !== 'A' || seenA) {
        fail(at, 'only one $A sequence is supported in the single template');
      }
      seenA = true;
      return;
    }
    const name =
      isObject(piece) && isObject(piece['SpecialToken']) ? piece['SpecialToken']['id'] : undefined;
    if (typeof name !== 'string') return fail(at, 'expected { Sequence } or { SpecialToken }');
    const entry = isObject(specials) ? specials[name] : undefined;
    const ids = isObject(entry) ? entry['ids'] : undefined;
    if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id) && (id as number) >= 0)) {
      return fail(`${field}.special_tokens["${name}"].ids`, 'expected an array of token ids');
    }
    (seenA ? suffix : prefix).push(...(ids as number[]));
  });
  if (!seenA) fail(`${field}.single`, 'has no $A sequence');
  return { prefix, suffix };
}
