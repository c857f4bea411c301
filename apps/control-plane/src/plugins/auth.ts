// Bearer tokens: the presented token is hashed (SHA-256) and compared with every configured
// hash in constant time (no early exit). Each token carries a role and a tenant.
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OperatorConfig, Role, TokenConfig } from '@anneal/protocol';
import { AnnealError } from '../errors.ts';

export interface Principal {
  name: string;
  role: Role;
  tenant: string;
  /** Hex SHA-256 of the token (rate-limit key; never the token). */
  tokenHash: string;
  rateLimit: { max: number; windowSeconds: number };
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Minimum role for the route; absent = no authentication (health, metrics, docs). */
    role?: Role;
  }
}

const RANK: Record<Role, number> = { viewer: 0, submitter: 1, operator: 2 };

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface TokenIndex {
  /** The principal for an Authorization header value, or null. */
  lookup(authorization: string | undefined): Principal | null;
}

export function createTokenIndex(config: OperatorConfig): TokenIndex {
  const entries = config.tokens.map((token: TokenConfig) => ({
    token,
    digest: Buffer.from(token.sha256, 'hex'),
  }));
  return {
    lookup(authorization) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      if (!match?.[1]) return null;
      const presented = hash('sha256', match[1], 'buffer');
      let found: TokenConfig | null = null;
      for (const entry of entries) {
        if (timingSafeEqual(presented, entry.digest)) found = entry.token;
      }
      if (!found) return null;
      return {
        name: found.name,
        role: found.role,
        tenant: found.tenant,
        tokenHash: presented.toString('hex'),
        rateLimit: found.rateLimit ?? config.rateLimit,
      };
    },
  };
}

/** Counts a request against its rate limit; throws (429) when the limit is reached. */
export type RequestLimiter = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * Adds the onRequest hook that authenticates routes whose config names a role. `limit` runs
 * after the token is looked up and before it is judged, so requests without a valid token are
 * rate-limited too (per client IP) and a token brute force gets 429s, not endless 401s.
 */
export function installAuth(
  app: FastifyInstance,
  tokens: TokenIndex,
  limit?: RequestLimiter,
): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const role = request.routeOptions.config.role;
    if (role === undefined) return;
    const principal = tokens.lookup(request.headers.authorization);
    request.principal = principal; // the rate-limit key: the token, or the IP when null
    await limit?.(request, reply);
    if (!principal) {
      throw new AnnealError(
        'ANNEAL_ERR_UNAUTHENTICATED',
        'send Authorization: Bearer <token>',
        undefined,
        {
          'www-authenticate': 'Bearer realm="anneal"',
        },
      );
    }
    if (RANK[principal.role] < RANK[role]) {
      throw new AnnealError(
        'ANNEAL_ERR_FORBIDDEN',
        `this operation needs role '${role}'; token '${principal.name}' has '${principal.role}'`,
      );
    }
  });
}

/** The authenticated principal (routes with a role only). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AnnealError('ANNEAL_ERR_UNAUTHENTICATED');
  return request.principal;
}
