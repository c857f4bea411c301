// The control plane's environment, parsed once at start-up into a frozen object.
// Nothing else in the app reads process.env.
import { Type, type Static } from '@sinclair/typebox';
import { envValues, formatIssues, schemaIssues } from '@anneal/protocol';
import {
  DEFAULT_ARTIFACT_DIR,
  DEFAULT_REPLICATION,
  isSentinelUrl,
  parseReplicaRequirement,
  sentinelOptions,
} from '@anneal/store';

export const ControlPlaneEnv = Type.Object({
  ANNEAL_HOST: Type.String({ default: '127.0.0.1', description: 'Interface to listen on.' }),
  ANNEAL_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  REDIS_URL: Type.String({
    // redis:// and rediss:// (TLS; user:password@ for ACL users), or Sentinel:
    // redis+sentinel://host:port,host:port/<primary> (packages/store/src/redis-url.ts).
    pattern: '^rediss?(\\+sentinel)?://',
    default: 'redis://127.0.0.1:6379',
  }),
  ANNEAL_KEY_PREFIX: Type.String({ pattern: '^\\{[^{}]+\\}', default: '{anneal}' }),
  ANNEAL_CONFIG: Type.Optional(
    Type.String({ minLength: 1, description: 'Operator config YAML; absent = local mode.' }),
  ),
  ANNEAL_TOKEN: Type.Optional(
    Type.String({ minLength: 16, description: 'Local mode operator token (generated if absent).' }),
  ),
  ANNEAL_ARTIFACT_DIR: Type.String({
    minLength: 1,
    default: DEFAULT_ARTIFACT_DIR,
    description:
      "The workers' artifact root (their ANNEAL_ARTIFACT_DIR, shared storage), read here only: rollouts and eval items under runs/<runId>/.",
  }),
  ANNEAL_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1_048_576 }),
  ANNEAL_REQUEST_TIMEOUT_MS: Type.Integer({
    minimum: 1_000,
    default: 30_000,
    description: 'A request not received in full (headers and body) this long after it began: 408.',
  }),
  ANNEAL_LOG_LEVEL: Type.Union(
    ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  ANNEAL_WORKER_TTL_SECONDS: Type.Integer({ minimum: 1, default: 30 }),
  ANNEAL_REDIS_TIMEOUT_MS: Type.Integer({
    minimum: 1,
    default: 5_000,
    description: 'Start-up deadline for reaching Redis (connect + PING).',
  }),
  ANNEAL_REDIS_WAIT_REPLICAS: Type.String({
    default: 'auto',
    description:
      "Replicas an acknowledged write waits for (WAIT): 'auto' = 1 while the primary has one, or a count (0 = off).",
  }),
  ANNEAL_REDIS_WAIT_TIMEOUT_MS: Type.Integer({
    minimum: 1,
    default: DEFAULT_REPLICATION.timeoutMs,
    description:
      'WAIT timeout; a write not confirmed within it answers 503 ANNEAL_ERR_NOT_REPLICATED.',
  }),
});
export type ControlPlaneEnv = Readonly<Static<typeof ControlPlaneEnv>>;

export class ControlPlaneEnvError extends Error {
  constructor(details: string) {
    super(`invalid environment:\n${details}`);
    this.name = 'ControlPlaneEnvError';
  }
}

/** Picks our variables from `source`, converts, applies defaults, validates, freezes. */
export function parseEnv(source: Record<string, string | undefined>): ControlPlaneEnv {
  const converted = envValues(ControlPlaneEnv, source);
  const issues = schemaIssues(ControlPlaneEnv, converted);
  if (issues.length > 0) {
    throw new ControlPlaneEnvError(formatIssues(issues).replace(/^\//gm, ''));
  }
  try {
    parseReplicaRequirement(
      (converted as { ANNEAL_REDIS_WAIT_REPLICAS: string }).ANNEAL_REDIS_WAIT_REPLICAS,
    );
  } catch (error) {
    throw new ControlPlaneEnvError(`ANNEAL_REDIS_WAIT_REPLICAS: ${(error as Error).message}`);
  }
  const url = (converted as { REDIS_URL: string }).REDIS_URL;
  if (isSentinelUrl(url)) {
    try {
      sentinelOptions(url); // a malformed Sentinel URL is a configuration error, named here
    } catch (error) {
      throw new ControlPlaneEnvError((error as Error).message);
    }
  }
  return Object.freeze(converted as Static<typeof ControlPlaneEnv>);
}
