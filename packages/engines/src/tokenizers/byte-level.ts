// Pieces of Hugging Face byte-level BPE shared by encode and decode: the GPT-2 byte-to-unicode
// map (every byte becomes a printable code point, so a space is 'Ġ'), and the pre-tokenizer
// regexes translated to JavaScript.

/** GPT-2 `bytes_to_unicode`: printable Latin-1 bytes map to themselves, the rest to 256+n. */
function buildByteMaps(): { encoder: string[]; decoder: Map<string, number> } {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const encoder: string[] = new Array<string>(256);
  const decoder = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const codePoint = printable.includes(b) ? b : 256 + shifted++;
    const char = String.fromCodePoint(codePoint);
    encoder[b] = char;
    decoder.set(char, b);
  }
  return { encoder, decoder };
}

const maps = buildByteMaps();
/** byte -> its unicode stand-in. */
export const BYTE_ENCODER: readonly string[] = maps.encoder;
/** unicode stand-in -> byte. */
export const BYTE_DECODER: ReadonlyMap<string, number> = maps.decoder;

const utf8 = new TextEncoder();

/** UTF-8 bytes of `text` as byte-level characters ('é' -> 'Ã©'). */
export function toByteLevel(text: string): string {
  let out = '';
  for (const byte of utf8.encode(text)) out += BYTE_ENCODER[byte];
  return out;
}

/** The regex of ByteLevel's `use_regex: true` (GPT-2). */
export const GPT2_SPLIT_PATTERN =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/**
 * Translate a tokenizer.json (Oniguruma/fancy-regex) pattern to a JavaScript RegExp with the
 * 'u' flag. Node 20 has no inline modifier groups, so `(?i:…)` becomes a plain group whose
 * letters are written as `[xX]` (only literal letters and escapes inside are supported — that
 * covers the contraction group of the Qwen2/Llama-3 patterns).
 */
export function toJsRegExp(pattern: string, field: string): RegExp {
  let translated = '';
  let i = 0;
  while (i < pattern.length) {
    if (pattern.startsWith('(?i:', i)) {
      const end = findGroupEnd(pattern, i + 4, field);
      translated += `(?:${caseFold(pattern.slice(i + 4, end), field)})`;
      i = end + 1;
      continue;
    }
    const char = pattern[i] as string;
    if (char === '\\') {
      translated += pattern.slice(i, i + 2);
      i += 2;
      continue;
    }
    translated += char;
    i++;
  }
  try {
    return new RegExp(translated, 'gu');
  } catch (error) {
    throw new Error(`${field}: pattern is not a valid JavaScript regex: ${String(error)}`, {
      cause: error,
    });
  }
}

function findGroupEnd(pattern: string, start: number, field: string): number {
  let depth = 0;
  for (let i = start; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\') i++;
    else if (char === '(') depth++;
    else if (char === ')') {
      if (depth === 0) return i;
      depth--;
    }
  }
  throw new Error(`${field}: unbalanced '(?i:' group in pattern`);
}

function caseFold(body: string, field: string): string {
  if (body.includes('[') || body.includes('(')) {
    throw new Error(
      `${field}: '(?i:…)' groups with character classes or nested groups are not supported`,
    );
  }
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const char = body[i] as string;
    if (char === '\\') {
      out += body.slice(i, i + 2);
      i++;
    } else if (char.toLowerCase() !== char.toUpperCase()) {
      out += `[${char.toLowerCase()}${char.toUpperCase()}]`;
    } else {
      out += char;
    }
  }
  return out;
}
