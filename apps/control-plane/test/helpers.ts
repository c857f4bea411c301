// Test support: a control plane on a real Redis (REDIS_URL) under a unique key prefix, with a
// two-tenant operator config and one token per role.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { type OperatorConfig, validateOperatorConfig } from '@anneal/protocol';
import { createStoreContext, deleteKeysWithPrefix, type StoreContext } from '@anneal/store';
import { buildApp } from '../src/app.ts';
import type { AppSettings } from '../src/context.ts';
import { sha256Hex } from '../src/plugins/auth.ts';
import { reconcile } from '../src/jobs/reconcile.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export const TOKENS = {
  acmeViewer: 'acme-viewer-token-0123456789',
  acmeSubmitter: 'acme-submitter-token-0123456789',
  acmeOperator: 'acme-operator-token-0123456789',
  betaSubmitter: 'beta-submitter-token-0123456789',
  limited: 'acme-limited-token-0123456789',
} as const;

export function testOperatorConfig(overrides: Record<string, unknown> = {}): OperatorConfig {
  const allKinds = ['sft', 'rm', 'grpo', 'eval'];
  const parsed = validateOperatorConfig({
    pools: { default: { slots: 1 }, gpu: { slots: 2 } },
    inference: { embedded: { type: 'embedded' } },
    trainers: {
      embedded: {
        type: 'embedded',
        capabilities: {
          kinds: allKinds,
          losses: ['cross_entropy', 'importance_sampling', 'ppo', 'bradley_terry'],
        },
      },
      sftonly: { type: 'embedded', capabilities: { kinds: ['sft'], losses: ['cross_entropy'] } },
    },
    search: { local: { type: 'local' } },
    baseModels: { tiny: { model: 'embedded:tiny' } },
    defaults: {
      pool: 'default',
      inference: 'embedded',
      trainer: 'embedded',
      search: 'local',
      baseModel: 'tiny',
    },
    tenants: { acme: { maxConcurrentRuns: 2 }, beta: {} },
    tokens: [
      { name: 'acme-viewer', sha256: sha256Hex(TOKENS.acmeViewer), role: 'viewer', tenant: 'acme' },
      {
        name: 'acme-submitter',
        sha256: sha256Hex(TOKENS.acmeSubmitter),
        role: 'submitter',
        tenant: 'acme',
      },
      {
        name: 'acme-operator',
        sha256: sha256Hex(TOKENS.acmeOperator),
        role: 'operator',
        tenant: 'acme',
      },
      {
        name: 'beta-submitter',
        sha256: sha256Hex(TOKENS.betaSubmitter),
        role: 'submitter',
        tenant: 'beta',
      },
      {
        name: 'limited',
        sha256: sha256Hex(TOKENS.limited),
        role: 'viewer',
        tenant: 'acme',
        rateLimit: { max: 3, windowSeconds: 60 },
      },
    ],
    ...overrides,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

export interface TestPlane {
  app: FastifyInstance;
  redis: Redis;
  /** The name every Redis connection of this plane carries (CLIENT LIST `name=`). */
  connectionName: string;
  prefix: string;
  store: StoreContext;
  operator: OperatorConfig;
  /** The artifact root the plane reads run files from (a fresh temporary directory). */
  artifactDir: string;
  /** Rebuilds the app on the same Redis + prefix (a control-plane restart). */
  restart(): Promise<FastifyInstance>;
  connection(): Redis;
  cleanup(): Promise<void>;
}

export async function testPlane(
  options: {
    operator?: OperatorConfig;
    settings?: Partial<AppSettings>;
    prefix?: string;
    /** The built console to serve (test/browser.ts bundledConsole()). */
    consoleDir?: string;
    /** API keys of Tinker-compatible trainers by endpoint name. */
    trainerApiKeys?: Record<string, string>;
  } = {},
): Promise<TestPlane> {
  // Every connection of this plane carries one name (ioredis copies it into duplicates), so a
  // test can count the plane's own connections on a Redis other tests share.
  const connectionName = `anneal-test-plane-${randomUUID().slice(0, 8)}`;
  const redis = new Redis(REDIS_URL, {
    maxRetriesPerRequest: null,
    enableAutoPipelining: true,
    connectionName,
  });
  const prefix = options.prefix ?? `{anneal-test-${randomUUID()}}`;
  const operator = options.operator ?? testOperatorConfig();
  const extra: Redis[] = [];
  const connection = () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: null, connectionName });
    extra.push(client);
    return client;
  };
  const store = createStoreContext(redis, prefix);
  const artifactDir = await mkdtemp(path.join(os.tmpdir(), 'anneal-plane-artifacts-'));
  const build = async () => {
    await reconcile(store, operator);
    const app = await buildApp({
      operator,
      redis,
      prefix,
      artifactDir,
      createBlockingClient: connection,
      defaultMetrics: false,
      settings: { sseKeepAliveMs: 500, ...options.settings },
      ...(options.consoleDir !== undefined && { consoleDir: options.consoleDir }),
      ...(options.trainerApiKeys && { trainerApiKeys: options.trainerApiKeys }),
    });
    await app.ready();
    return app;
  };
  const plane: TestPlane = {
    app: await build(),
    redis,
    connectionName,
    prefix,
    store,
    operator,
    artifactDir,
    async restart() {
      await plane.app.close();
      plane.app = await build();
      return plane.app;
    },
    connection,
    async cleanup() {
      await plane.app.close();
      await Promise.all(extra.map((c) => c.quit().catch(() => c.disconnect())));
      await deleteKeysWithPrefix(redis, prefix);
      await redis.quit();
      await rm(artifactDir, { recursive: true, force: true });
    },
  };
  return plane;
}

export function auth(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** POST /v1/runs with a YAML or JSON body. */
export function submit(
  app: FastifyInstance,
  body: string,
  options: { token?: string; idempotencyKey?: string; contentType?: string } = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: {
      ...auth(options.token ?? TOKENS.acmeSubmitter),
      'content-type':
        options.contentType ??
        (body.trim().startsWith('{') ? 'application/json' : 'application/yaml'),
      ...(options.idempotencyKey !== undefined && { 'idempotency-key': options.idempotencyKey }),
    },
    payload: body,
  });
}

export { eventually } from '@anneal/testing';
