// The forward-result byte reader (forward-reader.ts) against the generic path — decode, parse,
// classify as futures.ts does, fromWireForward — on seeded random replies written as Python's
// json writes them, on the replies it must refuse, and end to end through the fake server.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isObject } from '../http/request.ts';
import { seededRng } from '../http/timing.ts';
import type { Rng } from '../http/timing.ts';
import type { EngineError } from '../http/errors.ts';
import type { Datum, ForwardResult } from '../types.ts';
import { startTinker } from '../../test/tinker-harness.ts';
import { fromWireForward } from './convert.ts';
import { readForwardResult } from './forward-reader.ts';

const encoder = new TextEncoder();
const bytesOf = (body: string | Uint8Array) =>
  typeof body === 'string' ? encoder.encode(body) : body;

/** Compared bit for bit (negative zero included), metrics with their key order. */
type Outcome =
  | { ok: { logprobs: number[][]; metrics: Array<[string, number]> } }
  | { error: string }
  | { notResult: 'try_again' | 'error' };

function normalise(result: ForwardResult): Outcome {
  return {
    ok: {
      logprobs: result.logprobs.map((values) =>
        Array.from(new Uint32Array(values.buffer, values.byteOffset, values.length)),
      ),
      metrics: Object.entries(result.metrics),
    },
  };
}

/** What the client made of the reply before the reader: LazyReply's decode and parse, then
 * futures.ts classify (try_again and error bodies are not results), then fromWireForward. */
function generic(body: string | Uint8Array, n: number): Outcome {
  const text = new TextDecoder().decode(bytesOf(body));
  let json: unknown;
  try {
    json = text.length === 0 ? undefined : (JSON.parse(text) as unknown);
  } catch {
    json = undefined;
  }
  if (isObject(json) && json['type'] === 'try_again') return { notResult: 'try_again' };
  if (isObject(json) && 'error' in json) return { notResult: 'error' };
  try {
    return normalise(fromWireForward(json, n));
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Asserts the reader gives the generic path's answer; returns whether it answered. */
function check(body: string | Uint8Array, n: number, label: string): boolean {
  const read = readForwardResult(bytesOf(body), n);
  const expected = generic(body, n);
  if (read === undefined) return false;
  expect(normalise(read), `${label}: reader differs`).toStrictEqual(expected);
  return true;
}

/** `repr(float)` as Python writes it (json.dumps floats): shortest round trip digits,
 * exponent form below 1e-4 or from 1e16, `.0` on whole numbers. */
function pythonFloat(x: number): string {
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa = '', exp = ''] = x.toExponential().split('e');
  const e = Number(exp);
  const sign = mantissa.startsWith('-') ? '-' : '';
  const digits = mantissa.replace('-', '').replace('.', '');
  if (e < -4 || e >= 16) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : '';
    const magnitude = String(Math.abs(e)).padStart(2, '0');
    return `${sign}${digits[0]}${fraction}e${e < 0 ? '-' : '+'}${magnitude}`;
  }
  if (e < 0) return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
  return `${sign}${whole}.${digits.slice(e + 1) || '0'}`;
}

describe('pythonFloat', () => {
  it('writes what Python repr writes', () => {
    const cases: Array<[number, string]> = [
      [-0.6931471824645996, '-0.6931471824645996'],
      [1e-5, '1e-05'],
      [0.0001, '0.0001'],
      [-1.5e-7, '-1.5e-07'],
      [1e16, '1e+16'],
      [123456789012345.6, '123456789012345.6'],
      [-3, '-3.0'],
      [-0, '-0.0'],
      [100, '100.0'],
    ];
    for (const [x, text] of cases) expect(pythonFloat(x)).toBe(text);
  });
});

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;

function shuffle<T>(rng: Rng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(rng() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/** One logprob as a trainer writes it: mostly float32 values through Python's repr, some in
 * other JSON number forms (integers, exponents, 17 significant digits, negative zero). */
function randomNumber(rng: Rng): string {
  const r = rng();
  if (r < 0.7) return pythonFloat(Math.fround(-rng() * 20));
  if (r < 0.75) return pythonFloat(Math.fround(-rng() * 1e-6));
  if (r < 0.8) return pick(rng, ['-0.0', '0.0', '-0', '0', '-3', '12', '-1E+2', '2.5e-3']);
  if (r < 0.9) {
    const digits = Array.from({ length: 17 }, () => Math.floor(rng() * 10)).join('');
    return `-${digits[0]}.${digits.slice(1)}`;
  }
  if (r < 0.95)
    return `-${Math.floor(rng() * 9) + 1}.${Math.floor(rng() * 1e6)}e-${Math.floor(rng() * 40)}`;
  return pythonFloat(-rng() * 10 ** Math.floor(rng() * 40 - 20));
}

const METRIC_NAMES = [
  'loss:sum',
  'clip_frac:mean',
  'skyrl.ai/grad_norm',
  'grad_norm:last',
  'λ_kl:mean',
  '损失:sum',
  '🙂:max',
  '7',
  '2',
];

interface Style {
  comma: string;
  colon: string;
}

function object(rng: Rng, style: Style, members: Array<[string, string]>): string {
  const parts = shuffle(rng, members).map(([k, v]) => `${JSON.stringify(k)}${style.colon}${v}`);
  return `{${parts.join(style.comma)}}`;
}

function tensor(rng: Rng, style: Style, n: number): string {
  const data = Array.from({ length: n }, () => randomNumber(rng)).join(style.comma);
  return object(rng, style, [
    ['data', `[${data}]`],
    ['dtype', '"float32"'],
    ['shape', `[${n}]`],
  ]);
}

/** A forward_backward result as SkyRL (compact) or Python's default json.dumps writes it. */
function randomReply(rng: Rng, n: number): string {
  const style = pick(rng, [
    { comma: ',', colon: ':' },
    { comma: ', ', colon: ': ' },
    { comma: ',\n  ', colon: ' : ' },
  ]);
  const outputs = Array.from({ length: n }, () => {
    const length = pick(rng, [0, 1, 3, 17, 64]);
    const head = pick(rng, ['logprobs', 'scores', 'null-logprobs', 'both']);
    const members: Array<[string, string]> = [['elementwise_loss', tensor(rng, style, length)]];
    if (head === 'logprobs' || head === 'both')
      members.push(['logprobs', tensor(rng, style, length)]);
    if (head !== 'logprobs') members.push(['scores', tensor(rng, style, length)]);
    if (head === 'null-logprobs') members.push(['logprobs', 'null']);
    if (rng() < 0.3) members.push(['extra', '{"nested":[1,"x\\u00e9\\n",true,null,{"a":[]}]}']);
    return object(rng, style, members);
  });
  const metricNames = shuffle(rng, [...METRIC_NAMES]).slice(0, Math.floor(rng() * 5));
  const metrics = metricNames.map((name): [string, string] => [
    name,
    pick(rng, [randomNumber(rng), randomNumber(rng), 'null', '"n/a"', '1e400', '{"x":1}']),
  ]);
  const top: Array<[string, string]> = [
    ['loss_fn_output_type', '"scalar"'],
    ['loss_fn_outputs', `[${outputs.join(style.comma)}]`],
    ['metrics', object(rng, style, metrics)],
  ];
  if (rng() < 0.3) top.push(['type', '"forward_backward"']);
  if (rng() < 0.3) top.push(['request_id', '"req-7"']);
  return `${rng() < 0.2 ? '\n ' : ''}${object(rng, style, top)}${rng() < 0.2 ? '\n' : ''}`;
}

describe('forward-result reader on seeded random replies', () => {
  it('reads exactly what the generic path reads, and takes every one of them', () => {
    const rng = seededRng(20261205);
    for (let i = 0; i < 400; i += 1) {
      const n = 1 + Math.floor(rng() * 6);
      const body = randomReply(rng, n);
      expect(check(body, n, `reply ${i}`), `reply ${i} taken: ${body.slice(0, 300)}`).toBe(true);
    }
  });

  it('reads the replies the fake server and the embedded trainer write (JSON.stringify)', () => {
    const rng = seededRng(7);
    const values = Array.from({ length: 50 }, () => Math.fround(-rng() * 30));
    values.push(-0, 0, 1e-45, -3.4028234663852886e38);
    const reply = {
      loss_fn_output_type: 'scalar',
      loss_fn_outputs: [
        { logprobs: { data: values, dtype: 'float32', shape: [values.length] } },
        { scores: { data: [0.25], dtype: 'float32', shape: [1] } },
      ],
      metrics: { 'loss:sum': 12.5, 'clip_frac:mean': null, 'λ:mean': -0 },
    };
    expect(check(JSON.stringify(reply), 2, 'stringified')).toBe(true);
    expect(check(JSON.stringify(reply, null, 2), 2, 'indented')).toBe(true);
    // JSON.parse makes `__proto__` an own member, which readMetrics's assignment then drops.
    const proto = JSON.stringify(reply).replace('"λ:mean"', '"__proto__"');
    expect(check(proto, 2, '__proto__')).toBe(true);
  });
});

/** Decimals at and next to the midpoint of two adjacent float32 values: where a double read
 * from 17 digits with any error could round to the other float32. */
function midpointNumbers(rng: Rng, count: number): string[] {
  const texts: string[] = [];
  const bits = new Uint32Array(1);
  const float = new Float32Array(bits.buffer);
  while (texts.length < count) {
    bits[0] = Math.floor(rng() * 0x7f000000);
    const low = float[0] as number;
    bits[0] += 1;
    const midpoint = (low + (float[0] as number)) / 2;
    const digits = pick(rng, [17, 18, 19, 20]);
    const sign = rng() < 0.5 ? '-' : '';
    texts.push(`${sign}${midpoint.toPrecision(digits)}`, `${sign}${midpoint.toExponential(16)}`);
  }
  return texts;
}

describe('float32 values read from digits near a rounding boundary', () => {
  it('round as JSON.parse then a Float32Array would', () => {
    const data = midpointNumbers(seededRng(32), 4000);
    const body = `{"loss_fn_outputs":[{"logprobs":{"data":[${data.join(',')}]}}]}`;
    expect(check(body, 1, 'midpoints')).toBe(true);
  });
});

const DATA = '{"data":[-0.5,-1.25],"dtype":"float32","shape":[2]}';
const ONE = `{"loss_fn_outputs":[{"logprobs":${DATA}}],"metrics":{"loss:sum":1.5}}`;

describe('forward-result reader on replies it does not read', () => {
  // Each: the reader bails (undefined), and the generic path gives this answer.
  const cases: Array<[string, string | Uint8Array, number, string]> = [
    ['truncated', ONE.slice(0, -3), 1, 'result has no loss_fn_outputs array'],
    ['trailing garbage', `${ONE} x`, 1, 'result has no loss_fn_outputs array'],
    ['two values', `${ONE}${ONE}`, 1, 'result has no loss_fn_outputs array'],
    [
      'NaN (Python allow_nan)',
      ONE.replace('-0.5', 'NaN'),
      1,
      'result has no loss_fn_outputs array',
    ],
    ['a leading zero', ONE.replace('-0.5', '-00.5'), 1, 'result has no loss_fn_outputs array'],
    ['not an object', `[${ONE}]`, 1, 'result has no loss_fn_outputs array'],
    ['empty body', '', 1, 'result has no loss_fn_outputs array'],
    ['no outputs', '{"metrics":{}}', 1, 'result has no loss_fn_outputs array'],
    ['outputs not an array', '{"loss_fn_outputs":{}}', 1, 'result has no loss_fn_outputs array'],
    ['fewer outputs', ONE, 2, 'loss_fn_outputs has 1 entries for 2 datums'],
    [
      'more outputs',
      ONE.replace(`${DATA}}]`, `${DATA}},{"logprobs":${DATA}}]`),
      1,
      'loss_fn_outputs has 2 entries for 1 datums',
    ],
    [
      'a string in data',
      ONE.replace('-0.5', '"-0.5"'),
      1,
      'loss_fn_outputs[0].logprobs.data holds non-numbers',
    ],
    [
      'null in data',
      ONE.replace('-0.5', 'null'),
      1,
      'loss_fn_outputs[0].logprobs.data holds non-numbers',
    ],
    [
      'an entry not an object',
      '{"loss_fn_outputs":[[1]]}',
      1,
      'loss_fn_outputs[0].logprobs is missing',
    ],
    [
      'no logprobs or scores',
      '{"loss_fn_outputs":[{"elementwise_loss":{"data":[]}}]}',
      1,
      'loss_fn_outputs[0].logprobs is missing',
    ],
    [
      'null logprobs, no scores',
      '{"loss_fn_outputs":[{"logprobs":null}]}',
      1,
      'loss_fn_outputs[0].logprobs is missing',
    ],
    [
      'logprobs a number',
      '{"loss_fn_outputs":[{"logprobs":1,"scores":{"data":[1]}}]}',
      1,
      'loss_fn_outputs[0].logprobs is missing',
    ],
    [
      'no data',
      '{"loss_fn_outputs":[{"logprobs":{"dtype":"float32"}}]}',
      1,
      'loss_fn_outputs[0].logprobs is missing',
    ],
  ];
  for (const [label, body, n, message] of cases) {
    it(`${label}: the generic path's error`, () => {
      expect(readForwardResult(bytesOf(body), n)).toBeUndefined();
      expect(generic(body, n)).toStrictEqual({ error: message });
    });
  }

  const results: Array<[string, string | Uint8Array]> = [
    ['an escaped key', ONE.replace('"logprobs"', '"logprob\\u0073"')],
    ['an escaped metric name', ONE.replace('"loss:sum"', '"\\u03bb:sum"')],
    ['a byte order mark', new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode(ONE)])],
    [
      'duplicate outputs',
      ONE.replace('{"loss_fn_outputs"', `{"loss_fn_outputs":[],"loss_fn_outputs"`),
    ],
    [
      'duplicate metrics',
      ONE.replace('{"loss_fn_outputs"', `{"metrics":{"x":1},"loss_fn_outputs"`),
    ],
    ['duplicate logprobs', ONE.replace('[{"logprobs"', `[{"logprobs":{"data":[9]},"logprobs"`)],
    ['duplicate data', ONE.replace('{"data"', '{"data":[1,2,3],"data"')],
    [
      'a duplicate metric name',
      ONE.replace('{"loss:sum":1.5}', '{"loss:sum":1.5,"loss:sum":null}'),
    ],
    [
      'duplicate type',
      ONE.replace('{"loss_fn_outputs"', '{"type":"a","type":"b","loss_fn_outputs"'),
    ],
    [
      'nesting deeper than the reader reads',
      ONE.replace('"metrics"', `"deep":${'['.repeat(600)}${']'.repeat(600)},"metrics"`),
    ],
  ];
  for (const [label, body] of results) {
    it(`${label}: the generic path's result`, () => {
      expect(readForwardResult(bytesOf(body), 1)).toBeUndefined();
      expect(generic(body, 1)).toHaveProperty('ok');
    });
  }

  it('refuses the bodies futures.ts does not call results', () => {
    const notResults: Array<[string, Outcome]> = [
      [
        ONE.replace('{"loss_fn_outputs"', '{"type":"try_again","loss_fn_outputs"'),
        { notResult: 'try_again' },
      ],
      ['{"type":"try_again","request_id":"r","queue_state":"active"}', { notResult: 'try_again' }],
      [
        ONE.replace('{"loss_fn_outputs"', '{"error":"boom","category":"user","loss_fn_outputs"'),
        { notResult: 'error' },
      ],
      [
        ONE.replace('{"loss_fn_outputs"', '{"error":null,"loss_fn_outputs"'),
        { notResult: 'error' },
      ],
    ];
    for (const [body, outcome] of notResults) {
      expect(readForwardResult(bytesOf(body), 1), body).toBeUndefined();
      expect(generic(body, 1)).toStrictEqual(outcome);
    }
  });

  it('reads the members that only look like those bodies', () => {
    expect(
      check(
        ONE.replace('{"loss_fn_outputs"', '{"type":"try_again_later","loss_fn_outputs"'),
        1,
        'type',
      ),
    ).toBe(true);
    expect(
      check(
        ONE.replace('{"loss_fn_outputs"', '{"type":["try_again"],"loss_fn_outputs"'),
        1,
        'type',
      ),
    ).toBe(true);
    expect(check(ONE.replace('"metrics"', '"errors":1,"metrics"'), 1, 'errors')).toBe(true);
    expect(
      check(ONE.replace('"metrics":{"loss:sum":1.5}', '"metrics":{"error":1}'), 1, 'error metric'),
    ).toBe(true);
    expect(check(ONE.replace('{"loss:sum":1.5}', 'null'), 1, 'null metrics')).toBe(true);
    expect(check(ONE.replace('{"loss:sum":1.5}', '[1,2]'), 1, 'array metrics')).toBe(true);
  });
});

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const datum = (length: number): Datum => ({
  modelInput: Array.from({ length }, (_, i) => i + 1),
  lossFnInputs: {
    target_tokens: Int32Array.from({ length }, (_, i) => i + 2),
    weights: new Float32Array(length).fill(1),
  },
});

describe('forward_backward through the fake server', () => {
  for (const flavor of ['skyrl', 'tinker'] as const) {
    it(`${flavor}: the result is read from the reply's bytes, never parsed whole`, async () => {
      const { engine } = await startTinker(open, { flavor, pendingPolls: 1 });
      const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
      const parsed: string[] = [];
      const parse = JSON.parse.bind(JSON);
      vi.spyOn(JSON, 'parse').mockImplementation(
        (text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
          parsed.push(text);
          return parse(text, reviver) as unknown;
        },
      );
      const decoded = vi.spyOn(TextDecoder.prototype, 'decode');
      const result = await model.forwardBackward([datum(5), datum(3)], 'cross_entropy');
      const texts = decoded.mock.results.map((r) => String(r.value));
      vi.restoreAllMocks();
      expect(result.logprobs.map((l) => l.length)).toStrictEqual([5, 3]);
      expect(result.logprobs.every((l) => l.every((v) => v < 0))).toBe(true);
      expect(result.metrics).toHaveProperty(['loss:sum']);
      expect(parsed.filter((text) => text.includes('loss_fn_outputs'))).toStrictEqual([]);
      expect(texts.filter((text) => text.includes('loss_fn_outputs'))).toStrictEqual([]);
      expect(texts.some((text) => text.includes('request_id'))).toBe(true); // the spy sees replies
      // The pending answers (hosted Tinker's 200 try_again) still went through the parse.
      if (flavor === 'tinker') expect(parsed.some((t) => t.includes('try_again'))).toBe(true);
    });
  }

  it('tinker: a 200 {error, category} for a forward_backward still fails it', async () => {
    const { engine, fake } = await startTinker(open, { flavor: 'tinker', pendingPolls: 1 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.failNextFuture = 'sequence too long';
    const error = (await model
      .forwardBackward([datum(2)], 'cross_entropy')
      .catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_FUTURE_FAILED');
    expect(error.message).toMatch(/failed \[user error\]: sequence too long$/);
  });

  it('a result the reader refuses gives the generic path its result', async () => {
    const { engine, fake } = await startTinker(open, { flavor: 'skyrl', pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const escaped = '{"loss_fn_outputs":[{"logprob\\u0073":{"data":[-0.5,-2]}}],"metrics":{}}';
    fake.enqueue('retrieve_future', { kind: 'reply', status: 200, body: JSON.parse(escaped) });
    const result = await model.forward([datum(2)], 'cross_entropy');
    expect(result.logprobs.map((l) => Array.from(l))).toStrictEqual([[-0.5, -2]]);
  });
});
