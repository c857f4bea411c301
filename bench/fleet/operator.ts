// The fleet's operator config: the local config's embedded endpoints, three pools, tenants with
// concurrency caps (docs/architecture.md "The path of a run": written to Redis by the control
// plane's start-up reconcile, enforced by the `running` transition's Lua script) and one
// submitter token per tenant.
import { randomBytes } from 'node:crypto';
import { type OperatorConfig, localOperatorConfig, validateOperatorConfig } from '@anneal/protocol';
import { sha256Hex } from '@anneal/control-plane';

export const POOLS = ['gpu-a', 'gpu-b', 'gpu-c'] as const;
/** Tenants of the throughput phases: caps far above any slot count, so they never bind there. */
export const OPEN_TENANTS = ['team-1', 'team-2', 'team-3'] as const;
export const CAPPED_TENANT = 'capped';
export const CAPPED_LIMIT = 3;
export const OPEN_LIMIT = 100_000;

export interface Fleet {
  operator: OperatorConfig;
  /** Bearer token by tenant. */
  tokens: Record<string, string>;
  /** Cap by tenant. */
  caps: Record<string, number>;
}

export function fleetOperatorConfig(slotsPerWorker: number): Fleet {
  const tenants = [...OPEN_TENANTS, CAPPED_TENANT];
  const caps = Object.fromEntries(
    tenants.map((t) => [t, t === CAPPED_TENANT ? CAPPED_LIMIT : OPEN_LIMIT]),
  );
  const tokens = Object.fromEntries(
    tenants.map((t) => [t, `fleet-${randomBytes(18).toString('hex')}`]),
  );
  const local = localOperatorConfig(sha256Hex(randomBytes(18).toString('hex')));
  const parsed = validateOperatorConfig({
    ...local,
    pools: Object.fromEntries(POOLS.map((p) => [p, { slots: slotsPerWorker }])),
    defaults: { ...local.defaults, pool: POOLS[0] },
    tenants: Object.fromEntries(tenants.map((t) => [t, { maxConcurrentRuns: caps[t] }])),
    // The bench measures scheduling, not the per-token rate limit.
    tokens: tenants.map((t) => ({
      name: t,
      sha256: sha256Hex(tokens[t] ?? ''),
      role: 'submitter',
      tenant: t,
      rateLimit: { max: 1_000_000_000, windowSeconds: 60 },
    })),
  });
  if (!parsed.ok) throw new Error(`fleet operator config: ${JSON.stringify(parsed.errors)}`);
  return { operator: parsed.value, tokens, caps };
}
