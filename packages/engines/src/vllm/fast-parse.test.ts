// The field extractor (fast-parse.ts) against the generic path (JSON.parse + parse.ts): on every
// reply the fake vLLM servers give, on seeded random valid replies and on malformed ones, a
// reply read through parseCompletionReply gives exactly the generic path's result or error.
import { afterAll, describe, expect, it } from 'vitest';
import { LOGPROBS_MODES } from '@anneal/protocol';
import type { HttpReply } from '../http/request.ts';
import { seededRng } from '../http/timing.ts';
import type { Rng } from '../http/timing.ts';
import type { SampledSequence } from '../types.ts';
import { extractCompletion } from './fast-parse.ts';
import { LACKS_TOKEN_IDS, parseCompletion, parseCompletionReply } from './parse.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import { numberTexts } from '../../test/http-number-texts.ts';
import type { ServerShape, VllmGeneration } from '../../test/vllm/fixtures.ts';

const context = { engine: 'vLLM' as const, endpoint: 'e' };
const encoder = new TextEncoder();

type Outcome = { ok: SampledSequence[] } | { error: string };

/** The generic path on the body, as sendJson (which decodes like `response.text()`, dropping
 * a byte order mark) and parseCompletion read it. */
function generic(body: string | Uint8Array, n: number): Outcome {
  const text = new TextDecoder().decode(typeof body === 'string' ? encoder.encode(body) : body);
  let json: unknown;
  try {
    json = text.length === 0 ? undefined : (JSON.parse(text) as unknown);
  } catch {
    json = undefined;
  }
  try {
    return { ok: parseCompletion(json, n, context) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function viaReply(bytes: Uint8Array, n: number): Outcome {
  const text = new TextDecoder().decode(bytes);
  const reply: HttpReply = {
    status: 200,
    bytes,
    text,
    get json() {
      return parseOrUndefined(text);
    },
  };
  try {
    return { ok: parseCompletionReply(reply, n, context) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Deep equality that tells -0 from 0 and checks every number bit for bit. */
function sameSequences(a: SampledSequence[], b: SampledSequence[]): boolean {
  const sameNumbers = (x: ArrayLike<number> | null, y: ArrayLike<number> | null): boolean =>
    x === null || y === null
      ? x === y
      : x.length === y.length && Array.from(x).every((v, i) => Object.is(v, y[i]));
  return (
    a.length === b.length &&
    a.every((s, i) => {
      const t = b[i] as SampledSequence;
      return (
        s.finishReason === t.finishReason &&
        sameNumbers(s.tokens, t.tokens) &&
        sameNumbers(s.logprobs, t.logprobs)
      );
    })
  );
}

/** Asserts the invariant; returns whether the fast path answered. */
function check(bytes: Uint8Array, n: number, label: string): boolean {
  const text = new TextDecoder().decode(bytes);
  const expected = generic(text, n);
  const fast = extractCompletion(bytes, n);
  if ('error' in expected) {
    expect(fast, `${label}: the generic path fails, so must the fast one`).toBeUndefined();
  } else if (fast !== undefined) {
    expect(sameSequences(fast, expected.ok), `${label}: fast path differs`).toBe(true);
  }
  const actual = viaReply(bytes, n);
  if ('error' in expected) expect(actual, label).toEqual(expected);
  else expect('ok' in actual && sameSequences(actual.ok, expected.ok), label).toBe(true);
  return fast !== undefined;
}

describe('fast path on the fake servers’ replies', () => {
  const servers: FakeVllmServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  const cases: Array<[VllmGeneration, ServerShape]> = [
    ['v0.11', 'new'],
    ['v0.11', 'old'],
    ['current', 'new'],
    ['current', 'old'],
  ];
  it.each(cases)(
    '%s, %s shape: every logprobs mode, n, stop and top-k variant',
    async (generation, shape) => {
      for (const logprobsMode of LOGPROBS_MODES) {
        const fake = await FakeVllmServer.start({ generation, shape, logprobsMode, stopAfter: 3 });
        servers.push(fake);
        for (const n of [1, 3]) {
          for (const logprobs of [0, 2]) {
            for (const stop of [[], [2]]) {
              const body = {
                model: 'base-model',
                prompt: [5, 6, 7],
                n,
                max_tokens: 6,
                seed: 11,
                logprobs,
                stop_token_ids: stop,
                return_token_ids: true,
                return_tokens_as_token_ids: true,
              };
              const response = await fetch(`${fake.url}/v1/completions`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify(body),
              });
              expect(response.status).toBe(200);
              const bytes = new Uint8Array(await response.arrayBuffer());
              const label = `${generation}/${shape}/${logprobsMode}/n=${n}/logprobs=${logprobs}`;
              expect(check(bytes, n, label), `${label}: fast path taken`).toBe(true);
            }
          }
        }
      }
    },
  );

  it.each(cases)(
    '%s, %s shape: a request without logprobs is read from token_ids, or found to lack them',
    async (generation, shape) => {
      const fake = await FakeVllmServer.start({ generation, shape, stopAfter: 3 });
      servers.push(fake);
      const post = async (logprobs: boolean) => {
        const response = await fetch(`${fake.url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'base-model',
            prompt: [5, 6, 7],
            n: 3,
            max_tokens: 6,
            seed: 11,
            stop_token_ids: [2],
            return_token_ids: true,
            return_tokens_as_token_ids: true,
            ...(logprobs && { logprobs: 0 }),
          }),
        });
        return new Uint8Array(await response.arrayBuffer());
      };
      const scored = parseCompletion(
        JSON.parse(new TextDecoder().decode(await post(true))),
        3,
        context,
      );
      const bytes = await post(false);
      const json = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
      const fast = extractCompletion(bytes, 3, false);
      const slow = parseCompletion(json, 3, context, false);
      // a reply without logprobs read as if they were asked for: the generic path's error
      expect(extractCompletion(bytes, 3)).toBeUndefined();
      expect(() => parseCompletion(json, 3, context)).toThrow(/logprobs is missing/);
      if (shape === 'old') {
        expect(fast).toBeUndefined();
        expect(slow).toBe(LACKS_TOKEN_IDS);
        return;
      }
      expect(fast).toBeDefined();
      expect(sameSequences(fast!, slow as SampledSequence[])).toBe(true);
      expect(fast!.map((s) => Array.from(s.tokens))).toEqual(scored.map((s) => s.tokens));
      expect(fast!.map((s) => s.finishReason)).toEqual(scored.map((s) => s.finishReason));
      expect(fast!.every((s) => s.logprobs === null)).toBe(true);
    },
  );

  it('falls back with the generic error when an old server sends token text, not ids', async () => {
    const fake = await FakeVllmServer.start({ shape: 'old' });
    servers.push(fake);
    const response = await fetch(`${fake.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'base-model', prompt: [1], max_tokens: 2, logprobs: 0 }),
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(check(bytes, 1, 'token text')).toBe(false);
    expect(viaReply(bytes, 1)).toEqual({
      error: expect.stringContaining('is not "token_id:<id>"') as unknown as string,
    });
  });
});

// ---- seeded random valid replies, written with random whitespace, key order and escapes ----

/** A number as its JSON text. */
class Raw {
  constructor(readonly text: string) {}
}

/** A string servers never escape (finish reasons, "token_id:N"): escaped only in unusual replies. */
class Plain {
  constructor(readonly text: string) {}
}

type Value = Raw | Plain | string | boolean | null | Value[] | { [key: string]: Value };

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
const int = (rng: Rng, below: number): number => Math.floor(rng() * below);

function write(rng: Rng, value: Value, escapeKeys: boolean): string {
  const ws = (): string => pick(rng, ['', '', '', ' ', '\n', '\t', '\r\n  ']);
  if (value instanceof Raw) return value.text;
  if (value instanceof Plain) {
    return escapeKeys ? writeString(rng, value.text) : JSON.stringify(value.text);
  }
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return writeString(rng, value);
  if (Array.isArray(value)) {
    return `[${ws()}${value.map((v) => write(rng, v, escapeKeys)).join(`${ws()},${ws()}`)}${ws()}]`;
  }
  const members = Object.entries(value).map(
    ([key, v]) =>
      `${escapeKeys ? writeString(rng, key) : JSON.stringify(key)}${ws()}:${ws()}${write(rng, v, escapeKeys)}`,
  );
  return `{${ws()}${members.join(`${ws()},${ws()}`)}${ws()}}`;
}

/** A JSON string with random (valid) escapes: \uXXXX, the short forms, `\/`. */
function writeString(rng: Rng, value: string): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0) as number;
    const roll = rng();
    if (char === '"' || char === '\\' || code < 0x20 || roll < 0.1) {
      const short: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\t': '\\t' };
      const units = char.length === 2 ? [char.charCodeAt(0), char.charCodeAt(1)] : [code];
      out += short[char] ?? units.map((u) => `\\u${u.toString(16).padStart(4, '0')}`).join('');
    } else if (char === '/' && roll < 0.5) {
      out += '\\/';
    } else {
      out += char;
    }
  }
  return `${out}"`;
}

/** Number texts across the grammar: signs, fractions, exponents, long mantissas. */
function numberText(rng: Rng, integer: boolean): string {
  if (integer) {
    return pick(rng, [
      String(int(rng, 200_000)),
      `${int(rng, 2000)}.0`,
      `${1 + int(rng, 9)}e${int(rng, 4)}`,
      `${int(rng, 9)}E+1`,
      '0',
    ]);
  }
  const digits = (count: number): string =>
    Array.from({ length: count }, () => String(int(rng, 10))).join('');
  return pick(rng, [
    `-${int(rng, 20)}.${digits(1 + int(rng, 20))}`,
    `-0.${digits(1 + int(rng, 20))}`,
    `-${1 + int(rng, 9)}.${digits(int(rng, 5) + 1)}e-${int(rng, 40)}`,
    `-${1 + int(rng, 9)}${digits(int(rng, 25))}E${pick(rng, ['', '+', '-'])}${int(rng, 30)}`,
    `-0.000000000000000000000000${digits(1 + int(rng, 18))}`,
    String(-Math.fround(rng() * 20)),
    String(-rng() * 20),
    '-0',
    '0',
    '-0.0',
    `-1e${pick(rng, ['309', '-400', '22', '23'])}`,
    `-${int(rng, 100)}`,
  ]);
}

const shuffle = <T>(rng: Rng, items: T[]): T[] => {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = int(rng, i + 1);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
};

const TEXTS = [
  'plain',
  'é ü 日本',
  '😀 emoji',
  'quote " back \\ slash /',
  'tab\tnew\nline',
  '\u0001',
];

function randomChoice(rng: Rng, index: number): Record<string, Value> {
  const length = int(rng, 40);
  const ids = Array.from({ length }, () => int(rng, 152_000));
  const idForm = pick(rng, ['token_ids', 'token_ids', 'strings', 'null+strings'] as const);
  const tokenStrings = ids.map((id) =>
    idForm === 'token_ids' && rng() < 0.5
      ? pick(rng, TEXTS)
      : new Plain(`token_id:${rng() < 0.1 ? '00' : ''}${id}`),
  );
  const logprobs = Array.from({ length }, () => new Raw(numberText(rng, false)));
  const logprobsObject: Record<string, Value> = {
    text_offset: ids.map((_, i) => new Raw(String(i * 3))),
    token_logprobs: logprobs,
    tokens: tokenStrings,
    top_logprobs:
      rng() < 0.2
        ? null
        : tokenStrings.map((token, i) => {
            const key = typeof token === 'string' ? token : token.text;
            const value = logprobs[i] as Raw;
            return rng() < 0.8 ? { [key]: value } : { [key]: value, x: [] };
          }),
  };
  const fields: Array<[string, Value]> = [
    ['index', new Raw(String(index))],
    ['text', pick(rng, TEXTS)],
    ['logprobs', Object.fromEntries(shuffle(rng, Object.entries(logprobsObject)))],
    ['finish_reason', new Plain(pick(rng, ['stop', 'length', 'abort', 'repetition']))],
    ['stop_reason', pick(rng, [null, new Raw('151645'), '</s>'] as Value[])],
    ['prompt_logprobs', null],
  ];
  if (idForm === 'token_ids') {
    fields.push(['token_ids', ids.map((id) => new Raw(rng() < 0.1 ? `${id}.0` : String(id)))]);
    fields.push(['prompt_token_ids', [new Raw('1'), new Raw('2')]]);
  }
  if (idForm === 'null+strings') fields.push(['token_ids', null]);
  return Object.fromEntries(shuffle(rng, fields));
}

function randomReply(rng: Rng): { value: Value; n: number } {
  const n = 1 + int(rng, 4);
  const order = shuffle(
    rng,
    Array.from({ length: n }, (_, i) => i),
  );
  const top: Array<[string, Value]> = [
    ['id', 'cmpl-\u00e9\ud83d\ude00'],
    ['object', 'text_completion'],
    ['created', new Raw('1760000000')],
    ['model', pick(rng, TEXTS)],
    ['choices', order.map((index) => randomChoice(rng, index))],
    ['usage', { prompt_tokens: new Raw('3'), nested: [[[{}]], true, false, null] }],
    ['service_tier', null],
  ];
  return { value: Object.fromEntries(shuffle(rng, top)), n };
}

describe('fast path on seeded random replies', () => {
  it('returns exactly what the generic path returns on 400 valid replies', () => {
    const rng = seededRng(20_251_201);
    let fast = 0;
    const total = 400;
    for (let i = 0; i < total; i += 1) {
      const { value, n } = randomReply(rng);
      const escapeKeys = rng() < 0.05;
      const text = `${pick(rng, ['', ' ', '\n'])}${write(rng, value, escapeKeys)}${pick(rng, ['', '\n', ' \t'])}`;
      const expected = generic(text, n);
      expect('ok' in expected, `reply ${i} is valid: ${JSON.stringify(expected)}`).toBe(true);
      if (check(encoder.encode(text), n, `reply ${i}`)) fast += 1;
    }
    // Only escaped keys and the rare unusual form may fall back; the fast path must be the rule.
    expect(fast).toBeGreaterThan(total * 0.85);
  });
});

// ---- malformed and unusual replies: the generic path's answer, error messages included ----

const good = (over: Record<string, string> = {}): string => {
  const parts: Record<string, string> = {
    index: '0',
    text: '"ab"',
    logprobs:
      '{"text_offset":[0,1],"token_logprobs":[-0.5,-1.5],"tokens":["token_id:10","token_id:11"],"top_logprobs":[{"token_id:10":-0.5},{"token_id:11":-1.5}]}',
    finish_reason: '"stop"',
    stop_reason: 'null',
    token_ids: '[10,11]',
    ...over,
  };
  const body = Object.entries(parts)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `"${k}":${v}`)
    .join(',');
  return `{"id":"x","choices":[{${body}}],"usage":null}`;
};

const MALFORMED: Array<[string, string]> = [
  ['empty body', ''],
  ['truncated', good().slice(0, -10)],
  ['trailing comma in an object', good().replace('"usage":null}', '"usage":null,}')],
  ['trailing comma in an array', good({ token_ids: '[10,11,]' })],
  ['missing colon', good().replace('"usage":null', '"usage" null')],
  ['null logprob', good({ logprobs: '{"token_logprobs":[null,-1],"tokens":[]}' })],
  ['NaN literal', good({ logprobs: '{"token_logprobs":[NaN,-1]}' })],
  ['Infinity literal', good({ logprobs: '{"token_logprobs":[-Infinity,-1]}' })],
  ['leading zero', good({ token_ids: '[010,11]' })],
  ['plus sign', good({ token_ids: '[+10,11]' })],
  ['bare fraction', good({ logprobs: '{"token_logprobs":[.5,-1]}' })],
  ['dangling dot', good({ logprobs: '{"token_logprobs":[-1.,-1]}' })],
  ['dangling exponent', good({ logprobs: '{"token_logprobs":[-1e,-1]}' })],
  ['bad escape in skipped text', good({ text: '"a\\xb"' })],
  ['short \\u escape', good({ text: '"a\\u12"' })],
  ['raw control character', good({ text: '"a\u0001b"' })],
  ['unterminated string', good({ text: '"ab' })],
  ['trailing garbage', `${good()}x`],
  ['two documents', `${good()}${good()}`],
  ['single quotes', good({ finish_reason: "'stop'" })],
  ['bad literal in a skipped value', good({ stop_reason: 'nul' })],
  ['too few choices', '{"choices":[]}'],
  ['no choices', '{"object":"text_completion"}'],
  ['choices not an array', '{"choices":{}}'],
  ['a choice that is not an object', '{"choices":[1]}'],
  ['fewer token ids than logprobs', good({ token_ids: '[10]' })],
  ['fractional token id', good({ token_ids: '[10.5,11]' })],
  ['logprobs missing', good({ logprobs: '' })],
  ['logprobs null', good({ logprobs: 'null' })],
  ['token_logprobs missing', good({ logprobs: '{"tokens":["token_id:1","token_id:2"]}' })],
  ['finish_reason null', good({ finish_reason: 'null' })],
  ['unknown finish_reason', good({ finish_reason: '"eos"' })],
  [
    'token string with a sign',
    good({ token_ids: 'null', logprobs: '{"token_logprobs":[-1],"tokens":["token_id:-1"]}' }),
  ],
  [
    'token string with no digits',
    good({ token_ids: '', logprobs: '{"token_logprobs":[-1],"tokens":["token_id:"]}' }),
  ],
  ['not an object', '[1,2]'],
  ['a string token_logprob', good({ logprobs: '{"token_logprobs":["-1",-1]}' })],
  // inside the per-token arrays skipValue reads by its flat-array loop
  ['trailing comma in a skipped flat array', good({ stop_reason: '[1,2,]' })],
  ['missing comma in a skipped flat array', good({ stop_reason: '[{"a":1}{"b":2}]' })],
  ['unterminated key in a skipped flat array', good({ stop_reason: '[{"a:1}]' })],
  ['bad number in a skipped flat array', good({ stop_reason: '[{"a":-}]' })],
  ['bad literal in a skipped flat array', good({ stop_reason: '[{"a":nul}]' })],
  ['unclosed skipped flat array', good({ stop_reason: '[{"a":1}' })],
];

const UNUSUAL_BUT_VALID: Array<[string, string]> = [
  [
    'duplicate token_ids (last wins)',
    good().replace('"token_ids":[10,11]', '"token_ids":[1,2],"token_ids":[10,11]'),
  ],
  ['duplicate choices (last wins)', good().replace('{"id":"x",', '{"id":"x","choices":[],')],
  ['escaped key', good().replace('"finish_reason"', '"finish\\u005freason"')],
  ['escaped finish_reason', good({ finish_reason: '"st\\u006fp"' })],
  ['index not a number', good({ index: '"0"' })],
  ['token_ids a string', good({ token_ids: '"10,11"' })],
  [
    'escaped token string',
    good({ token_ids: '', logprobs: '{"token_logprobs":[-1],"tokens":["token_id:\\u0031"]}' }),
  ],
  ['byte order mark (dropped by the UTF-8 decoding)', `\ufeff${good()}`],
  ['finish_reason of Object.prototype', good({ finish_reason: '"toString"' })],
  ['token strings without token_ids', good({ token_ids: '' })],
  // ids the fast path's Int32Array would not hold as JSON.parse reads them
  ['a token id past int32', good({ token_ids: '[2147483648,11]' })],
  ['a token id of -0', good({ token_ids: '[-0,11]' })],
  ['a negative token id past int32', good({ token_ids: '[-2147483649,11]' })],
  // ids the fast path's digits-only loop hands to the general number reader
  ['token ids with a fraction or an exponent', good({ token_ids: '[1e1,11.0]' })],
  ['a token id of eleven digits', good({ token_ids: '[21474836470,11]' })],
  ['the largest int32 token id, and 0', good({ token_ids: '[2147483647,0]' })],
  [
    'non-ASCII and escaped text in a skipped string',
    good({ text: String.raw`"ü€😀\\\"\n\u00e9"` }),
  ],
  // per-token arrays in forms the flat-array loop leaves to skipValue's general loop
  [
    'whitespace in a skipped per-token array',
    good({ stop_reason: '[ {"token_id:10" : -0.5} , {"token_id:11":-1.5}\n]' }),
  ],
  ['a nested value in a skipped array', good({ stop_reason: '[{"a":[1,{"b":null}]},[2],{}]' })],
  [
    'empty objects, literals and strings in a skipped array',
    good({ stop_reason: '[{},true,"x",null,{"a":false,"b":"]"}]' }),
  ],
  [
    'nesting deeper than the fast path reads',
    good({ stop_reason: `${'['.repeat(600)}${']'.repeat(600)}` }),
  ],
  [
    'deep but legal nesting in a skipped value',
    good({ stop_reason: `${'['.repeat(200)}${']'.repeat(200)}` }),
  ],
];

describe('fast path on malformed and unusual replies', () => {
  it.each(MALFORMED)('%s: falls back and gives the generic error', (label, text) => {
    const bytes = encoder.encode(text);
    const n = 1;
    const expected = generic(text, n);
    expect('error' in expected, `${label} is malformed`).toBe(true);
    expect(extractCompletion(bytes, n)).toBeUndefined();
    expect(viaReply(bytes, n)).toEqual(expected);
  });

  it('skips strings four bytes at a time without missing an end, an escape or a control byte', () => {
    // each kind of byte that stops the four-byte test, at every offset of the four it is read in,
    // inside a skipped string (`text`) and a skipped member's key: the fast path reads what the
    // generic path reads, and refuses what it refuses (a raw control byte, a bad escape)
    const valid = ['\\"', '\\\\', '\\u00e9', '\\n', 'é', '日本'];
    const invalid = ['\u0001', '\u001f', '\\x'];
    let accepted = 0;
    for (const special of [...valid, ...invalid]) {
      for (let offset = 0; offset < 8; offset += 1) {
        const content = `${'a'.repeat(offset)}${special}${'b'.repeat(7 - offset)}`;
        const label = `${JSON.stringify(special)} after ${offset} bytes`;
        const inText = good({ text: `"${content}"` });
        const inKey = good().replace('"finish_reason"', `"${content}":1,"finish_reason"`);
        for (const [where, body] of [
          ['in text', inText],
          ['in a key', inKey],
        ] as const) {
          const fast = check(encoder.encode(body), 1, `${label}, ${where}`);
          expect('ok' in generic(body, 1), `${label}, ${where}: valid`).toBe(
            valid.includes(special),
          );
          if (fast) accepted += 1;
        }
      }
    }
    // every valid body took the fast path (escaped keys excepted: the reader leaves them to the
    // generic path)
    expect(accepted).toBe(valid.length * 8 * 2 - 4 * 8);
  });

  it('passes a `token_id:<id>` string at once only when it is exactly that, else reads it as any string', () => {
    // the shortcut for vLLM's per-token strings (tokens, top_logprobs keys): every way a string
    // can start like one and go on otherwise — more characters, an escape, a control byte, no
    // end — in a skipped array's strings and its objects' keys, and in the per-token arrays
    const continuations = ['"', 'x"', '9x"', '\\u0031"', '\\""', '\u0001"', '\\x"', ''];
    const starts = ['token_id:', 'token_id:12', 'token_id', 'token_idx', 'token_i'];
    let fastValid = 0;
    let valid = 0;
    for (const start of starts) {
      for (const rest of continuations) {
        const string = `"${start}${rest}`;
        for (const [where, body] of [
          ['a skipped string', good({ stop_reason: `[${string},"x"]` })],
          ['a skipped key', good({ stop_reason: `[{${string}:-0.5}]` })],
          [
            'a top_logprobs key',
            good({
              logprobs: `{"token_logprobs":[-0.5,-1.5],"tokens":["token_id:10","token_id:11"],"top_logprobs":[{${string}:-0.5},{"token_id:11":-1.5}]}`,
            }),
          ],
        ] as const) {
          const label = `${JSON.stringify(string)} in ${where}`;
          const isValid = 'ok' in generic(body, 1);
          const fast = check(encoder.encode(body), 1, label);
          if (isValid) valid += 1;
          if (isValid && fast) fastValid += 1;
        }
      }
    }
    // every valid body was read by the fast path (its keys are plain or skipped)
    expect(valid).toBeGreaterThan(0);
    expect(fastValid).toBe(valid);
  });

  it.each(UNUSUAL_BUT_VALID)('%s: the generic result', (label, text) => {
    check(encoder.encode(text), 1, label);
    expect('ok' in generic(text, 1), `${label} is valid`).toBe(true);
  });

  it('reads logprobs across the grammar as float32, JSON.parse values rounded once', () => {
    const texts = numberTexts();
    const body = `{"choices":[{"index":0,"logprobs":{"token_logprobs":[${texts.join(',')}]},"finish_reason":"length","token_ids":[${texts.map((_, i) => i).join(',')}]}]}`;
    const fast = extractCompletion(encoder.encode(body), 1);
    expect(fast).toBeDefined();
    // float32: JSON.parse's double rounded once, as the generic path keeps it
    const expected = texts.map((t) => Math.fround(JSON.parse(t) as number));
    expect(fast?.[0]?.logprobs?.every((v, i) => Object.is(v, expected[i]))).toBe(true);
  });
});
