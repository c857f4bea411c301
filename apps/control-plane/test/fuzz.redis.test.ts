// Fuzzes every path + method of the served OpenAPI document (/docs/json) with requests generated
// from its own schemas plus hostile input (fuzz-arbitraries.ts): a client error must be a 4xx
// application/problem+json carrying a catalogued ANNEAL_ERR_* code whose status matches, never
// a 5xx and never a hang; and the heap must not grow with the number of requests.
//
// Deterministic: a fixed seed, so a failure reproduces. FUZZ_RUNS sets the cases per operation
// (default sized for CI; `npm run soak -w @anneal/control-plane` runs a large size nightly).
import { STATUS_CODES } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '@anneal/protocol';
import { heartbeatWorker } from '@anneal/store';
import {
  type JsonSchema,
  type Operation,
  authorization,
  contentTypes,
  fromSchema,
  headerValue,
  hostileYaml,
  malformedJson,
  nearValid,
  oddString,
  operationsOf,
  shapedBySchema,
  toJsonText,
} from './fuzz-arbitraries.ts';
import { TOKENS, type TestPlane, auth, submit, testOperatorConfig, testPlane } from './helpers.ts';

const SEED = 0x616e6e65; // "anne"
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 200);
const BODY_LIMIT = 1_048_576;
const WORKER_ID = 'fuzz-worker-1';
/** Heap growth allowed between the warm-up and the end (retained per request would be far more). */
const HEAP_GROWTH_LIMIT = 48 * 1024 * 1024;

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

interface Failure {
  request: string;
  why: string;
}

let plane: TestPlane;
let operations: Operation[];
let runIds: string[];
const statusCounts = new Map<number, number>();
/** Per operation: `status code` -> count (printed at the end: what the fuzzer reached). */
const outcomes = new Map<string, Map<string, number>>();
let total = 0;

beforeAll(async () => {
  // Every token well above what a run of the fuzzer sends: the rate limit is not under test.
  plane = await testPlane({
    operator: testOperatorConfig({ rateLimit: { max: 1_000_000_000, windowSeconds: 60 } }),
    settings: { bodyLimitBytes: BODY_LIMIT },
  });
  operations = operationsOf((await plane.app.inject('/docs/json')).json());
  // Finished sft and eval runs of the fuzzing tenant (their event streams end at once), another
  // tenant's run, and a live worker: generated ids sometimes hit real resources.
  const own = (await submit(plane.app, 'kind: sft\nsteps: 2\n')).json<{ id: string }>().id;
  const other = (await submit(plane.app, 'kind: sft\n', { token: TOKENS.betaSubmitter })).json<{
    id: string;
  }>().id;
  const evalRun = (await submit(plane.app, 'kind: eval\n')).json<{ id: string }>().id;
  for (const id of [own, evalRun]) {
    const cancelled = await plane.app.inject({
      method: 'POST',
      url: `/v1/runs/${id}/cancel`,
      headers: auth(TOKENS.acmeOperator),
    });
    expect(cancelled.statusCode).toBe(200);
  }
  runIds = [own, evalRun, other];
  await heartbeatWorker(
    plane.store,
    {
      id: WORKER_ID,
      pool: 'default',
      slots: 1,
      busy: 0,
      runs: [],
      startedAt: new Date().toISOString(),
    },
    3600,
  );
}, 60_000);

afterAll(async () => {
  console.info(
    `fuzz: ${total} requests over ${operations.length} operations (seed ${SEED}, ${RUNS} per operation); statuses ${JSON.stringify(Object.fromEntries([...statusCounts].sort(([a], [b]) => a - b)))}`,
  );
  for (const [op, counts] of outcomes)
    console.info(`  ${op}: ${[...counts].map(([k, n]) => `${k}×${n}`).join(', ')}`);
  await plane.cleanup();
});

/** Writes `text` on a fresh TCP connection and returns all the server sent before closing. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text, 'latin1'));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error('no answer within 5 s')), 5000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.on('error', reject);
  });
}

/** Percent-encodes the UTF-8 bytes (encodeURIComponent throws on a lone surrogate). */
function encode(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).padStart(2, '0').toUpperCase()}`,
    )
    .join('');
}

/** Values for `{name}` in `path`: real ids, schema-shaped ones, and garbage (encoded or raw). */
function pathValue(op: Operation, name: string): fc.Arbitrary<string> {
  const schema = op.parameters.find((p) => p.in === 'path' && p.name === name)?.schema ?? {};
  const real = op.path.startsWith('/v1/workers') ? [WORKER_ID] : runIds;
  return fc.oneof(
    { arbitrary: fc.constantFrom(...real), weight: 4 },
    { arbitrary: fromSchema(schema).map((v) => encode(String(v))), weight: 4 },
    { arbitrary: oddString.map(encode), weight: 1 },
    {
      arbitrary: fc.constantFrom(
        '',
        '%',
        '%zz',
        '%C0%AF',
        '..',
        '.%2e',
        '%2F',
        'a/b',
        'x'.repeat(5000),
      ),
      weight: 1,
    },
  );
}

/** Schema-shaped four times in five, else anything fromSchema gives (wrong types included). */
const mostlyShaped = (schema: JsonSchema) =>
  fc.oneof(
    { arbitrary: shapedBySchema(schema), weight: 4 },
    { arbitrary: fromSchema(schema), weight: 1 },
  );

/** A query string from the documented query parameters, plus unknown and malformed ones. */
function queryString(op: Operation): fc.Arbitrary<string> {
  const params = op.parameters.filter((p) => p.in === 'query');
  const pairs = params.map((p) =>
    fc.option(
      mostlyShaped(p.schema).map((value) =>
        (Array.isArray(value) ? value : [value]).map(
          (v) =>
            `${p.name}=${encode(typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))}`,
        ),
      ),
      { freq: 2 },
    ),
  );
  return fc
    .tuple(
      fc.tuple(...pairs),
      fc.option(
        fc.constantFrom(
          'unknown=1',
          'limit=1&limit=2',
          'limit=',
          'a[b]=c',
          '%',
          '&&&=&',
          `label=${'x'.repeat(3000)}`,
          'fromStep=99999999999999999999',
          'limit=1e3',
          'names=' + ','.repeat(4000),
        ),
        { freq: 6 },
      ),
    )
    .map(([chosen, raw]) => {
      const parts = chosen.flatMap((p) => p ?? []);
      if (raw) parts.push(raw);
      return parts.length > 0 ? `?${parts.join('&')}` : '';
    });
}

/** Body text and its content type: schema-shaped JSON or YAML, malformed, hostile, oversized. */
function bodyOf(op: Operation): fc.Arbitrary<{ text?: string; type?: string }> {
  const documented = Object.keys(op.body ?? {});
  const schema = op.body?.['application/json'] ?? Object.values(op.body ?? {})[0] ?? {};
  const yamlTypes = documented.filter((t) => t.includes('yaml'));
  const text = fc.oneof(
    { arbitrary: fromSchema(schema).map(toJsonText), weight: 4 },
    { arbitrary: nearValid(schema).map(toJsonText), weight: 8 },
    { arbitrary: malformedJson, weight: 3 },
    { arbitrary: hostileYaml, weight: yamlTypes.length > 0 ? 3 : 1 },
    { arbitrary: oddString, weight: 1 },
    {
      arbitrary: fc.constantFrom(
        `{"name":"${'x'.repeat(BODY_LIMIT)}"}`,
        `kind: sft\nname: ${'y'.repeat(BODY_LIMIT - 100)}\n`,
      ),
      weight: 1,
    },
  );
  return fc.oneof(
    {
      arbitrary: fc.record({ text, type: contentTypes(documented) }),
      weight: 9,
    },
    { arbitrary: fc.constant({}), weight: 1 },
  );
}

function requestOf(op: Operation): fc.Arbitrary<FuzzRequest> {
  const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
  const headerParams = op.parameters.filter((p) => p.in === 'header');
  return fc
    .record({
      path: fc.tuple(...names.map((n) => pathValue(op, n))),
      query: queryString(op),
      auth: authorization(TOKENS.acmeOperator, [TOKENS.acmeViewer, TOKENS.betaSubmitter]),
      documentedHeaders: fc.tuple(
        ...headerParams.map((p) =>
          fc.option(
            fc.oneof(
              { arbitrary: headerValue, weight: 1 },
              { arbitrary: mostlyShaped(p.schema).map(String), weight: 2 },
            ),
            { freq: 2 },
          ),
        ),
      ),
      extraHeaders: fc.dictionary(
        fc.constantFrom('x-request-id', 'accept', 'content-encoding', 'origin', 'x-forwarded-for'),
        headerValue,
        { maxKeys: 2 },
      ),
      body: op.body ? bodyOf(op) : fc.option(fc.record({ text: oddString }), { freq: 10 }),
    })
    .map(({ path, query, auth: authValue, documentedHeaders, extraHeaders, body }) => {
      let i = 0;
      const url = op.path.replace(/\{[^}]+\}/g, () => path[i++] ?? '') + query;
      const headers: Record<string, string> = { ...extraHeaders };
      headerParams.forEach((p, k) => {
        const value = documentedHeaders[k];
        if (value !== null && value !== undefined) headers[p.name] = value;
      });
      if (authValue !== undefined) headers['authorization'] = authValue;
      const request: FuzzRequest = { method: op.method, url, headers };
      if (body?.text !== undefined) {
        request.payload = body.text;
        const type = 'type' in body ? body.type : undefined;
        if (type !== undefined) headers['content-type'] = type;
      }
      return request;
    });
}

function describeRequest(r: FuzzRequest): string {
  const payload =
    r.payload === undefined
      ? ''
      : ` body(${r.payload.length})=${JSON.stringify(r.payload.slice(0, 160))}`;
  return `${r.method} ${r.url.slice(0, 200)} ${JSON.stringify(r.headers).slice(0, 300)}${payload}`;
}

/** Why a response breaks the contract, or undefined when it keeps it. */
function contractBreach(status: number, type: string, body: string): string | undefined {
  if (status >= 500) return `status ${status}: ${body.slice(0, 300)}`;
  if (status < 400) return undefined;
  if (!type.startsWith('application/problem+json')) return `${status} as '${type}'`;
  let problem: { code?: string; status?: number };
  try {
    problem = JSON.parse(body) as typeof problem;
  } catch {
    return `${status} with a body that is not JSON`;
  }
  const code = problem.code as ErrorCode | undefined;
  if (!code || !(code in ERROR_CODES)) return `${status} with unknown code '${String(code)}'`;
  if (ERROR_CODES[code].status !== status || problem.status !== status)
    return `${status} carries ${code} (${ERROR_CODES[code].status}) / status ${String(problem.status)}`;
  return undefined;
}

async function send(request: FuzzRequest, op?: Operation): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no response within 10 s')), 10_000);
  });
  try {
    const response = await Promise.race([plane.app.inject(request), timeout]);
    total++;
    statusCounts.set(response.statusCode, (statusCounts.get(response.statusCode) ?? 0) + 1);
    if (op) {
      const key = `${op.method} ${op.path}`;
      const counts = outcomes.get(key) ?? new Map<string, number>();
      const code =
        response.statusCode >= 400
          ? ` ${String(response.json<{ code?: string }>().code).replace('ANNEAL_ERR_', '')}`
          : '';
      const outcome = `${response.statusCode}${code}`;
      counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
      outcomes.set(key, counts);
    }
    return contractBreach(
      response.statusCode,
      String(response.headers['content-type'] ?? ''),
      response.body,
    );
  } catch (error) {
    return `inject failed: ${(error as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}

const gc = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('fuzzing every operation of the OpenAPI document', () => {
  let heapAfterWarmUp = 0;

  it('covers every documented operation', () => {
    expect(operations.map((o) => `${o.method} ${o.path}`)).toEqual(
      expect.arrayContaining(['POST /v1/runs', 'POST /v1/workers/{id}/drain', 'GET /healthz']),
    );
  });

  it('warms up (one pass over every operation) before the heap baseline', async () => {
    for (const op of operations) {
      for (const request of fc.sample(requestOf(op), { seed: SEED + 1, numRuns: 5 }))
        await send(request);
    }
    heapAfterWarmUp = heapUsed();
  }, 120_000);

  it(`answers every generated request with < 500, problem+json 4xx (${RUNS} per operation)`, async () => {
    const failures: Failure[] = [];
    for (const [index, op] of operations.entries()) {
      const cases = fc.sample(requestOf(op), { seed: SEED + index, numRuns: RUNS });
      for (const request of cases) {
        const why = await send(request, op);
        if (why) failures.push({ request: describeRequest(request), why });
      }
    }
    expect(
      failures.slice(0, 20).map((f) => `${f.why}\n    <- ${f.request}`),
      `${failures.length} of ${total} requests broke the contract`,
    ).toEqual([]);
  }, 600_000);

  it('keeps the heap bounded after the fuzzing', () => {
    const growth = heapUsed() - heapAfterWarmUp;
    console.info(`fuzz: heap ${(growth / 2 ** 20).toFixed(1)} MiB after ${total} requests`);
    expect(growth).toBeLessThan(HEAP_GROWTH_LIMIT);
  });
});

// Each case below was a fuzzer finding; they stay as plain regression tests.
describe('requests the fuzzer found answered outside the contract', () => {
  const problemOf = async (request: FuzzRequest) => {
    const response = await plane.app.inject(request);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    return { status: response.statusCode, code: response.json<{ code: string }>().code };
  };

  it('a path with broken percent-encoding is 400 problem+json (was Fastify JSON)', async () => {
    for (const url of ['/v1/runs/%zz', '/v1/runs/%C0%AF/cancel', '/v1/workers/%/drain']) {
      const method = url.endsWith('/v1/runs/%zz') ? 'GET' : 'POST';
      expect(await problemOf({ method, url, headers: auth(TOKENS.acmeOperator) }), url).toEqual({
        status: 400,
        code: 'ANNEAL_ERR_VALIDATION',
      });
    }
  });

  it('a valid 128-character worker id reaches the route (was 414 from the router)', async () => {
    const id = `w${'x'.repeat(127)}`;
    expect(
      await problemOf({
        method: 'POST',
        url: `/v1/workers/${id}/drain`,
        headers: auth(TOKENS.acmeOperator),
      }),
    ).toEqual({ status: 404, code: 'ANNEAL_ERR_WORKER_NOT_FOUND' });
  });

  it('a YAML collection as a mapping key is refused without a process warning (was stderr per request)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    try {
      for (const body of [
        '? [a, b]\n: c\nkind: sft\n',
        'kind: sft\nlabels: { ? { x: 1 } : y }\n',
      ]) {
        const response = await submit(plane.app, body, { token: TOKENS.acmeSubmitter });
        expect(response.statusCode, body).toBe(400);
        expect(response.json<{ detail: string }>().detail).toMatch(/key must be a plain scalar/);
      }
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });

  it('a request the HTTP parser refuses is answered as problem+json (was Fastify JSON)', async () => {
    await plane.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = plane.app.server.address() as AddressInfo;
    const cases: Record<string, [string, number, string]> = {
      'bad header character': [
        'GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n',
        400,
        'ANNEAL_ERR_VALIDATION',
      ],
      'Content-Length and Transfer-Encoding': [
        'POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        400,
        'ANNEAL_ERR_VALIDATION',
      ],
      'bad chunk size': [
        'POST /v1/runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n',
        400,
        'ANNEAL_ERR_VALIDATION',
      ],
      'TLS hello on the plain port': [
        '\u0016\u0003\u0001\u0002\u0000\r\n\r\n',
        400,
        'ANNEAL_ERR_VALIDATION',
      ],
      'headers over 16 KiB': [
        `GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'ANNEAL_ERR_HEADERS_TOO_LARGE',
      ],
    };
    const answers: Record<string, string> = {};
    const wanted: Record<string, string> = {};
    for (const [name, [text, status, code]] of Object.entries(cases)) {
      const raw = await rawExchange(port, text);
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      const type = /content-type: ([^\r]+)/i.exec(head)?.[1] ?? '';
      const problem = body.startsWith('{') ? (JSON.parse(body) as { code?: string }) : {};
      answers[name] = `${head.split('\r\n')[0]} ${type} ${problem.code ?? ''}`;
      wanted[name] = `HTTP/1.1 ${status} ${STATUS_CODES[status]} application/problem+json ${code}`;
    }
    expect(answers).toEqual(wanted);
  });

  it('a path parameter past the router limit is 400 problem+json (was 414 Fastify JSON)', async () => {
    expect(
      await problemOf({
        method: 'GET',
        url: `/v1/runs/${'x'.repeat(5000)}`,
        headers: auth(TOKENS.acmeOperator),
      }),
    ).toEqual({ status: 400, code: 'ANNEAL_ERR_VALIDATION' });
  });
});
