// Secrets never reach the logs: a control plane started the production way (startControlPlane:
// env, operator config file, pino logger at trace level) writes its log lines into a captured
// stream while it serves requests that carry tokens (valid, unknown, over the rate limit, in a
// Basic header), idempotency keys and run specs, with a Redis URL that has a password and an
// operator config whose endpoint URLs carry credentials. No line may contain a token (the
// preimage of a configured sha256), a configured token hash, or a password.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteKeysWithPrefix } from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import { Redis } from 'ioredis';
import { parseEnv } from '../src/env.ts';
import { sha256Hex } from '../src/plugins/auth.ts';
import { type RunningControlPlane, startControlPlane } from '../src/server.ts';
import { REDIS_URL } from './helpers.ts';

const REDIS_PASSWORD = 'redis-Pa55word-7f3a9c';
const ENDPOINT_PASSWORD = 'vllm-Pa55word-41b2e8';
const TOKENS = {
  operator: 'log-operator-token-9c1d2e3f4a5b',
  submitter: 'log-submitter-token-5e6f7a8b9c0d',
  limited: 'log-limited-token-0a1b2c3d4e5f',
};
const UNKNOWN_TOKEN = 'log-unknown-token-deadbeefcafe';
const BASIC_PASSWORD = 'basic-Pa55word-9e8d7c';
const IDEMPOTENCY_KEY = `idem-${randomUUID()}`;

/** The same Redis, addressed with a password it does not require (ioredis then goes on). */
function withPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.toString();
}

const operatorYaml = `
pools: { default: { slots: 1 } }
inference:
  embedded: { type: embedded }
  remote:
    type: vllm
    replicas: ['http://svc:${ENDPOINT_PASSWORD}@vllm-0.invalid:8000']
    apiKeyEnv: VLLM_API_KEY
trainers:
  embedded:
    type: embedded
    capabilities: { kinds: [sft, rm, grpo, eval], losses: [cross_entropy, importance_sampling, bradley_terry] }
search: { local: { type: local } }
baseModels: { tiny: { model: 'embedded:tiny' } }
defaults: { pool: default, inference: embedded, trainer: embedded, search: local, baseModel: tiny }
tenants: { acme: {} }
tokens:
  - { name: op, sha256: ${sha256Hex(TOKENS.operator)}, role: operator, tenant: acme }
  - { name: sub, sha256: ${sha256Hex(TOKENS.submitter)}, role: submitter, tenant: acme }
  - { name: lim, sha256: ${sha256Hex(TOKENS.limited)}, role: viewer, tenant: acme, rateLimit: { max: 2, windowSeconds: 60 } }
`;

const lines: string[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  },
});
const logger = createLogger({ name: 'control-plane', level: 'trace', destination: capture });

let plane: RunningControlPlane;
let dir: string;
const prefix = `{anneal-logtest-${randomUUID()}}`;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-log-secrets-'));
  const configPath = path.join(dir, 'operator.yaml');
  await writeFile(configPath, operatorYaml);
  plane = await startControlPlane({
    env: parseEnv({
      REDIS_URL: withPassword(REDIS_URL, REDIS_PASSWORD),
      ANNEAL_PORT: '0',
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_CONFIG: configPath,
      ANNEAL_LOG_LEVEL: 'trace',
    }),
    logger,
  });
}, 60_000);

afterAll(async () => {
  await plane?.close();
  const redis = new Redis(REDIS_URL);
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
  await rm(dir, { recursive: true, force: true });
});

const call = (url: string, init: RequestInit & { token?: string } = {}) => {
  const { token, ...rest } = init;
  return fetch(`${plane.url}${url}`, {
    ...rest,
    headers: {
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
      ...(rest.headers as Record<string, string> | undefined),
    },
  });
};

/** Every secret, by what it is (the failure message names the kind, never the value). */
const SECRETS: Record<string, string> = {
  'operator token': TOKENS.operator,
  'submitter token': TOKENS.submitter,
  'rate-limited token': TOKENS.limited,
  'unknown token': UNKNOWN_TOKEN,
  'Basic password': BASIC_PASSWORD,
  'Basic credentials (base64)': Buffer.from(`user:${BASIC_PASSWORD}`).toString('base64'),
  'Redis password': REDIS_PASSWORD,
  'endpoint URL password': ENDPOINT_PASSWORD,
  'operator token sha256': sha256Hex(TOKENS.operator),
  'submitter token sha256': sha256Hex(TOKENS.submitter),
  'rate-limited token sha256': sha256Hex(TOKENS.limited),
  'unknown token sha256': sha256Hex(UNKNOWN_TOKEN),
};

function leaked(text: string): string[] {
  return Object.entries(SECRETS)
    .filter(([, secret]) => text.includes(secret))
    .map(([what]) => what);
}

describe('secrets in logs', () => {
  it('serves token-bearing requests and logs none of the secrets', async () => {
    const statuses: Record<string, number> = {};
    const spec = JSON.stringify({ kind: 'sft', steps: 2, labels: { team: 'logs' } });
    const post = (body: string) =>
      call('/v1/runs', {
        method: 'POST',
        token: TOKENS.submitter,
        headers: { 'content-type': 'application/json', 'idempotency-key': IDEMPOTENCY_KEY },
        body,
      });
    const created = await post(spec);
    statuses['submit'] = created.status;
    const run = (await created.json()) as { id: string };
    statuses['submit again'] = (await post(spec)).status;
    statuses['same key, other body'] = (await post(JSON.stringify({ kind: 'rm' }))).status;
    statuses['bad spec'] = (await post('{"kind":"sft","steps":-1}')).status;
    statuses['get'] = (await call(`/v1/runs/${run.id}`, { token: TOKENS.operator })).status;
    statuses['cancel'] = (
      await call(`/v1/runs/${run.id}/cancel`, { method: 'POST', token: TOKENS.operator })
    ).status;
    statuses['events'] = (
      await call(`/v1/runs/${run.id}/events`, { token: TOKENS.operator })
    ).status;
    statuses['unknown token'] = (await call('/v1/runs', { token: UNKNOWN_TOKEN })).status;
    statuses['Basic'] = (
      await call('/v1/runs', {
        headers: {
          authorization: `Basic ${Buffer.from(`user:${BASIC_PASSWORD}`).toString('base64')}`,
        },
      })
    ).status;
    // Limit 2 per fixed window: a 429 within 5 requests, even across a window boundary.
    let limited = 0;
    for (let i = 0; i < 5 && limited !== 429; i++)
      limited = (await call('/v1/pools', { token: TOKENS.limited })).status;
    statuses['over the limit'] = limited;
    statuses['drain as submitter'] = (
      await call('/v1/workers/w-1/drain', { method: 'POST', token: TOKENS.submitter })
    ).status;
    expect(statuses).toEqual({
      submit: 201,
      'submit again': 200,
      'same key, other body': 409,
      'bad spec': 400,
      get: 200,
      cancel: 200,
      events: 200,
      'unknown token': 401,
      Basic: 401,
      'over the limit': 429,
      'drain as submitter': 403,
    });

    // The capture works: Fastify logged each request with its id.
    const requestLines = lines.filter((l) => l.includes('"incoming request"'));
    expect(requestLines.length).toBeGreaterThanOrEqual(Object.keys(statuses).length);
    expect(leaked(lines.join('\n'))).toEqual([]);
  }, 60_000);

  it('redacts credentials a client puts in the query string', async () => {
    const before = lines.length;
    const created = await call('/v1/runs', {
      method: 'POST',
      token: TOKENS.submitter,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'sft', steps: 1 }),
    });
    const run = (await created.json()) as { id: string };
    const urls = [
      `/v1/runs?token=${TOKENS.operator}`,
      `/v1/runs?access_token=${TOKENS.submitter}&limit=5`,
      `/v1/runs?limit=5&${TOKENS.limited}`,
      `/v1/runs/${run.id}/events?lastEventId=${UNKNOWN_TOKEN}`,
      `/v1/runs/${run.id}/events?lastEventId=${encodeURIComponent(`1-0 ${TOKENS.operator}`)}`,
      `/v1/runs?state=${TOKENS.submitter}`,
      `/healthz?api_key=${BASIC_PASSWORD}`,
    ];
    const statuses = await Promise.all(
      urls.map(async (url) => (await call(url, { token: TOKENS.operator })).status),
    );
    // Each was refused (400: unknown or malformed query) or served without using the value.
    expect(statuses.every((status) => status < 500)).toBe(true);
    const logged = lines.slice(before).filter((l) => l.includes('"incoming request"'));
    expect(logged.length).toBeGreaterThanOrEqual(urls.length + 1);
    expect(leaked(lines.join('\n'))).toEqual([]);
    // What is kept: the path and the plain values of known parameters.
    expect(logged.join('\n')).toContain('/v1/runs?[redacted]&limit=5');
    expect(logged.join('\n')).toContain('/v1/runs?state=[redacted]');
  });

  it('logs a client X-Request-ID only when it looks like an id', async () => {
    const reqIds = async (requestId: string) => {
      const before = lines.length;
      await call('/healthz', { headers: { 'x-request-id': requestId } });
      return lines
        .slice(before)
        .map((line) => (JSON.parse(line) as { reqId?: string }).reqId)
        .filter((id) => id !== undefined);
    };
    const kept = await reqIds('edge-7f3a.1:2');
    expect(kept.length).toBeGreaterThan(0);
    expect(new Set(kept)).toEqual(new Set(['edge-7f3a.1:2']));
    for (const bad of ['x'.repeat(5000), 'id with spaces', 'a"b', '\u00e9t\u00e9']) {
      const ids = await reqIds(bad);
      expect(ids.length, bad.slice(0, 20)).toBeGreaterThan(0);
      expect(
        ids.every((id) => /^[0-9a-f-]{36}$/.test(id)),
        bad.slice(0, 20),
      ).toBe(true);
    }
  });

  it('logs a Redis connection error with the password masked', async () => {
    // The store's connection helper, as the control plane uses it, on a port nothing listens on.
    const client = connectRedis(withPassword('redis://127.0.0.1:1', REDIS_PASSWORD), logger, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    await client.connect().catch(() => {});
    client.disconnect();
    const errorLines = lines.filter((l) => l.includes('Redis connection error'));
    expect(errorLines.length).toBeGreaterThan(0);
    expect(errorLines.join('\n')).toContain(':***@');
    expect(leaked(lines.join('\n'))).toEqual([]);
  });

  it('never returns an endpoint URL credential in a response either', async () => {
    const runs = await call('/v1/runs', { token: TOKENS.operator });
    const pools = await call('/v1/pools', { token: TOKENS.operator });
    const doc = await call('/docs/json');
    expect(leaked((await runs.text()) + (await pools.text()) + (await doc.text()))).toEqual([]);
  });
});
