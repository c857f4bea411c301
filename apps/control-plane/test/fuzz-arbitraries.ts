// fast-check arbitraries for fuzzing the API from its served OpenAPI document: requests shaped
// by each operation's schemas (path, query, header parameters, request body), mixed with what a
// hostile or broken client sends — wrong types, huge numbers, odd unicode, malformed JSON, YAML
// anchors/aliases and tags, deep nesting, oversized bodies, bad headers. Used by
// fuzz.redis.test.ts; nothing here knows a route by name.
import fc from 'fast-check';

/** The part of JSON Schema 2020-12 that the served document's schemas use (no $ref there). */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
}

export interface Parameter {
  in: 'path' | 'query' | 'header' | 'cookie';
  name: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  /** OpenAPI path template, e.g. `/v1/runs/{id}`. */
  path: string;
  parameters: Parameter[];
  /** Media type -> schema of the request body, when the operation takes one. */
  body?: Record<string, JsonSchema>;
  /** false when `security: []` (no token needed). */
  authenticated: boolean;
}

/** Every path + method of an OpenAPI 3.1 document. */
export function operationsOf(doc: {
  paths: Record<string, Record<string, Record<string, unknown>>>;
}): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const content = (op['requestBody'] as { content?: Record<string, { schema: JsonSchema }> })
        ?.content;
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: (op['parameters'] as Parameter[] | undefined) ?? [],
        ...(content && {
          body: Object.fromEntries(Object.entries(content).map(([t, c]) => [t, c.schema])),
        }),
        authenticated: !(Array.isArray(op['security']) && op['security'].length === 0),
      });
    }
  }
  return operations;
}

/** Strings nobody expects: lone surrogates, NUL, BOM, RTL overrides, combining marks, emoji. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\uFEFF',
    '\uD800',
    '\uDFFF\uD800',
    '\u202E\u2066abc',
    'e\u0301\u0301\u0301',
    '👩‍👩‍👧‍👦',
    '\r\n\r\n',
    '../../etc/passwd',
    '%00',
    '%E0%A4%A',
    '${jndi:ldap://x}',
    '__proto__',
    'constructor',
    'null',
    'NaN',
    '-0',
    '1e309',
  ),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);

/** Numbers at and past every edge JSON and JavaScript have. */
export const edgeNumber: fc.Arbitrary<number | string> = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    -1,
    1.5,
    2 ** 31,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    1e308,
  ),
  fc.integer(),
  fc.double(),
  // Literals JSON.stringify cannot produce: the text is spliced in raw.
  fc.constantFrom('1e309', '-1e309', '123456789012345678901234567890', '0x10', '1_000', '.5', '+1'),
);

/** A value of the wrong type for almost any field. */
export const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  oddString,
  fc.integer(),
  fc.constantFrom(null, true, [], {}, 1e308),
);

const RAW_NUMBER = '\u0000raw:';

/** JSON text, where string values marked RAW_NUMBER become bare number literals. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value).replace(
    new RegExp(`"${RAW_NUMBER.replace('\u0000', '\\\\u0000')}([^"]*)"`, 'g'),
    '$1',
  );
}

/**
 * A value shaped by `schema`: right types most of the time, and at every node a chance of a
 * wrong type, an edge number, a missing required field or an unknown one.
 */
export function fromSchema(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  const shaped = shapedBySchema(schema, depth);
  return fc.oneof(
    { arbitrary: shaped, weight: 8 },
    { arbitrary: wrongValue, weight: 1 },
    { arbitrary: edgeNumber.map((n) => (typeof n === 'string' ? RAW_NUMBER + n : n)), weight: 1 },
  );
}

export function shapedBySchema(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => fromSchema(s, depth)));
  if (schema.allOf?.[0]) return fromSchema(schema.allOf[0], depth);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return schema.pattern
        ? fc.oneof(
            { arbitrary: fc.stringMatching(new RegExp(schema.pattern)), weight: 4 },
            { arbitrary: oddString, weight: 1 },
          )
        : fc.oneof(
            { arbitrary: fc.string({ maxLength: schema.maxLength ?? 40 }), weight: 4 },
            { arbitrary: oddString, weight: 1 },
          );
    case 'integer':
      return fc.oneof(
        {
          arbitrary: fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1_000_000 }),
          weight: 4,
        },
        { arbitrary: fc.integer(), weight: 1 },
      );
    case 'number':
      return fc.oneof(
        {
          arbitrary: fc.double({
            min: schema.minimum ?? -1e6,
            max: schema.maximum ?? 1e6,
            noNaN: true,
          }),
          weight: 4,
        },
        { arbitrary: fc.double(), weight: 1 },
      );
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return depth > 6
        ? fc.constant([])
        : fc.array(schema.items ? fromSchema(schema.items, depth + 1) : wrongValue, {
            maxLength: 4,
          });
    case 'object':
      return depth > 6 ? fc.constant({}) : objectFromSchema(schema, depth);
    default:
      return wrongValue;
  }
}

function objectFromSchema(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const required = (schema.required ?? []).filter((key) => key in properties);
  const model = Object.fromEntries(
    Object.entries(properties).map(([key, s]) => [key, fromSchema(s, depth + 1)]),
  );
  const extra = fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), oddString), wrongValue, {
    minKeys: 1,
    maxKeys: 2,
  });
  // Required fields present most of the time; any field may go missing; unknown fields now and
  // then.
  return fc
    .tuple(
      fc.oneof(
        { arbitrary: fc.record(model, { requiredKeys: required }), weight: 3 },
        { arbitrary: fc.record(model, { requiredKeys: [] }), weight: 1 },
      ),
      fc.option(extra, { freq: 8 }),
    )
    .map(([record, unknown]) => (unknown ? { ...record, ...unknown } : record));
}

/**
 * Bodies one or two fields away from the smallest valid one: for each alternative of the schema
 * (a discriminated union such as the run spec's `kind`), its constant fields plus up to three
 * other properties, well-typed more often than not. These get past validation into name
 * resolution, capability checks and idempotency, where whole random documents never arrive.
 */
export function nearValid(schema: JsonSchema): fc.Arbitrary<unknown> {
  const alternatives = schema.anyOf ?? schema.oneOf ?? [schema];
  return fc.oneof(
    ...alternatives.map((alternative) => {
      const properties = alternative.properties ?? {};
      const fixed = Object.fromEntries(
        Object.entries(properties).flatMap(([key, s]) =>
          s.enum?.length === 1 ? [[key, s.enum[0]]] : s.const !== undefined ? [[key, s.const]] : [],
        ),
      );
      const free = Object.keys(properties).filter((key) => !(key in fixed));
      if (free.length === 0) return fc.constant(fixed);
      return fc
        .uniqueArray(fc.constantFrom(...free), { maxLength: 3 })
        .chain((keys) =>
          fc.tuple(
            ...keys.map((key) =>
              fc
                .oneof(
                  { arbitrary: shapedBySchema(properties[key] ?? {}, 1), weight: 3 },
                  { arbitrary: fromSchema(properties[key] ?? {}, 1), weight: 1 },
                )
                .map((value) => [key, value] as const),
            ),
          ),
        )
        .map((entries) => ({ ...fixed, ...Object.fromEntries(entries) }));
    }),
  );
}

const nested = (open: string, close: string, n: number, inner = '1') =>
  open.repeat(n) + inner + close.repeat(n);

/** JSON text that no parser should accept, or that accepts but hurts a naive one. */
export const malformedJson: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => {
    const text = JSON.stringify(v) ?? 'null';
    return text.slice(0, Math.max(0, text.length - 1));
  }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom(
    '{',
    '}',
    '{"kind":',
    '{"kind":"sft",}',
    "{'kind':'sft'}",
    '{"kind":"sft"}{"kind":"sft"}',
    '[]',
    'null',
    '0',
    '"sft"',
    'true',
    '{"__proto__":{"polluted":1},"kind":"sft"}',
    '{"constructor":{"prototype":{"x":1}},"kind":"sft"}',
    '{"kind":"sft","kind":"rm"}',
    '\uFEFF{"kind":"sft"}',
    '{"kind":"sft"}\u0000',
    '{"reason":"\\ud800"}',
    '{"checkpointAndRelease":1e309}',
    '{"steps":1e309,"kind":"sft"}',
    '{"steps":-0,"kind":"sft"}',
    '{"steps":123456789012345678901234567890,"kind":"sft"}',
  ),
  fc.integer({ min: 60, max: 100_000 }).map((n) => nested('[', ']', n)),
  fc.integer({ min: 60, max: 20_000 }).map((n) => nested('{"a":', '}', n)),
  fc.integer({ min: 1000, max: 300_000 }).map((n) => `[${'1,'.repeat(n)}1]`),
);

/** YAML the spec parser must refuse or bound: aliases, anchors, tags, deep blocks, directives. */
export const hostileYaml: fc.Arbitrary<string> = fc.oneof(
  // Billion laughs: each level doubles `width` times.
  fc
    .record({ levels: fc.integer({ min: 2, max: 12 }), width: fc.integer({ min: 2, max: 10 }) })
    .map(({ levels, width }) => {
      const lines = ['kind: sft', 'a0: &a0 [lol, lol]'];
      for (let i = 1; i < levels; i++)
        lines.push(
          `a${i}: &a${i} [${Array.from({ length: width }, () => `*a${i - 1}`).join(', ')}]`,
        );
      return lines.join('\n');
    }),
  fc
    .integer({ min: 50, max: 5000 })
    .map(
      (n) =>
        `kind: sft\nlabels: &l { team: x }\n${Array.from({ length: n }, (_, i) => `x${i}: *l`).join('\n')}`,
    ),
  fc
    .integer({ min: 10, max: 3000 })
    .map((n) => Array.from({ length: n }, (_, i) => `${' '.repeat(i)}a:`).join('\n')),
  fc.integer({ min: 10, max: 5000 }).map((n) => `kind: sft\nlabels: ${nested('[', ']', n, 'x')}`),
  fc.integer({ min: 10, max: 3000 }).map((n) => `${'- '.repeat(n)}x`),
  fc.constantFrom(
    'kind: sft\nname: &a [*a]',
    'kind: sft\n<<: *missing',
    'base: &b { kind: sft, steps: 3 }\n<<: *b',
    'kind: !!js/function "function(){return 1}"\n',
    'kind: !!binary aGVsbG8=\n',
    'kind: !<tag:yaml.org,2002:python/object> {}\n',
    'kind: sft\nsteps: !!float .inf\n',
    'kind: sft\nsteps: .nan\n',
    'kind: sft\nsteps: 0x7FFFFFFFFFFFFFFFFFFF\n',
    'kind: sft\nsteps: 1_000\n',
    'kind: sft\nseed: 2001-12-14t21:59:43.10-05:00\n',
    '%YAML 1.1\n---\nkind: sft\n',
    '%TAG ! tag:evil,2000:\n---\nkind: !x sft\n',
    'kind: sft\n---\nkind: rm\n',
    '---\n...\n',
    'kind: sft\n\tsteps: 3\n',
    'kind: sft\nname: "\\ud800"\n',
    '? [a, b]\n: c\nkind: sft\n',
    '? { kind: sft }\n: 1\n',
    'kind: sft\n__proto__: { polluted: 1 }\n',
    'kind: sft\nlabels: { __proto__: x }\n',
    'kind: |\n  sft\n',
    'kind: >-\n  sft\n',
    'kind: sft\nkind: rm\n',
    '&a kind: sft\n',
    '*a',
    '!',
    ': :',
    '- - - -',
    '\uFEFFkind: sft\n',
  ),
);

/** Content types a client may send, right and wrong. */
export const contentTypes = (documented: string[]): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...documented), weight: 6 },
    {
      arbitrary: fc.constantFrom(
        undefined,
        '',
        'application/json; charset=utf-8',
        'application/json; charset=utf-16',
        'APPLICATION/JSON',
        'application/json;',
        'application/json; charset="',
        'application/problem+json',
        'application/yaml; charset=latin1',
        'text/plain',
        'text/html',
        'multipart/form-data; boundary=x',
        'application/x-www-form-urlencoded',
        'application/octet-stream',
        '*/*',
        'application/',
        ';;;',
      ),
      weight: 3,
    },
    { arbitrary: fc.string({ maxLength: 30 }), weight: 1 },
  );

/** Authorization header values: mostly `preferred` (to get past auth), else broken ones. */
export function authorization(
  preferred: string,
  others: string[],
): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { arbitrary: fc.constant(`Bearer ${preferred}`), weight: 17 },
    {
      arbitrary: fc.constantFrom(
        undefined,
        '',
        'Bearer',
        'Bearer ',
        `bearer ${preferred}`,
        `Bearer  ${preferred}  `,
        `Bearer ${preferred} extra`,
        `Basic ${Buffer.from(`user:${preferred}`).toString('base64')}`,
        `Bearer ${'a'.repeat(10_000)}`,
        'Bearer \u00ff\u00fe',
        ...others.map((t) => `Bearer ${t}`),
      ),
      weight: 3,
    },
    {
      arbitrary: fc.string({ maxLength: 40 }).map((s) => `Bearer ${s}`),
      weight: 1,
    },
  );
}

/** Header values Node's HTTP parser lets through (visible ASCII, latin1, tab). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.stringMatching(/^[\t\x20-\x7e\x80-\xff]{0,300}$/),
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1714070000000-0',
    '99999999999999999999-0',
    'x'.repeat(8192),
  ),
);
