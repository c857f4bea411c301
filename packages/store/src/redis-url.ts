// REDIS_URL forms the control plane and workers accept, turned into an ioredis client:
//   redis://[user[:password]@]host[:port][/db]       plain; user = a Redis 6 ACL user
//   rediss://…                                       the same over TLS
//   redis+sentinel://[user[:password]@]host:port[,host:port…]/<primary name>[/db]
//                       [?sentinelUsername=…&sentinelPassword=…]
//   rediss+sentinel://…                              Sentinel, TLS to the sentinels and nodes
// With Sentinel the client asks the sentinels for the current primary and asks again after a
// failover (ioredis sentinel mode), so a process outlives the loss of its primary. The
// user/password are the data nodes' (ACL); the sentinels' own are query parameters.
import { Redis, type RedisOptions, type SentinelAddress } from 'ioredis';

const SENTINEL_URL =
  /^(rediss?)\+sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#@]+)\/([^/?#]+)(?:\/(\d+))?\/?(?:\?([^#]*))?$/;

export class RedisUrlError extends Error {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super(`REDIS_URL ${redactUrl(url)}: ${reason}`);
    this.name = 'RedisUrlError';
  }
}

/** Password(s) replaced by `***`, also where `new URL` cannot parse (several sentinel hosts). */
export function redactUrl(url: string): string {
  return url
    .replace(/^([a-z+]+:\/\/[^:@/]*:)[^@/]*@/i, '$1***@')
    .replace(/([?&]sentinelPassword=)[^&#]*/i, '$1***');
}

export const isSentinelUrl = (url: string): boolean => /^rediss?\+sentinel:\/\//i.test(url);

const port = (text: string, url: string): number => {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > 65535) {
    throw new RedisUrlError(url, `'${text}' is not a port`);
  }
  return value;
};

/** The ioredis options of a `redis+sentinel://` or `rediss+sentinel://` URL. */
export function sentinelOptions(url: string): RedisOptions {
  const match = SENTINEL_URL.exec(url);
  if (!match) {
    throw new RedisUrlError(
      url,
      'expected redis+sentinel://[user[:password]@]host:port[,host:port…]/<primary name>[/db]',
    );
  }
  const [, scheme, user, password, hosts, name, db, query] = match;
  const sentinels: SentinelAddress[] = hosts!.split(',').map((entry) => {
    const at = entry.lastIndexOf(':');
    if (at <= 0) throw new RedisUrlError(url, `sentinel '${entry}' needs host:port`);
    // [::1]:26379 -> host ::1 (ioredis takes the bare IPv6 address).
    const host = entry.slice(0, at).replace(/^\[(.*)\]$/, '$1');
    return { host, port: port(entry.slice(at + 1), url) };
  });
  const params = new URLSearchParams(query ?? '');
  for (const key of params.keys()) {
    if (key !== 'sentinelUsername' && key !== 'sentinelPassword') {
      throw new RedisUrlError(
        url,
        `unknown parameter '${key}' (sentinelUsername, sentinelPassword)`,
      );
    }
  }
  const tls = scheme === 'rediss';
  const decode = (v: string | undefined) => (v ? decodeURIComponent(v) : undefined);
  return {
    sentinels,
    name: decodeURIComponent(name!),
    ...(db !== undefined && { db: Number(db) }),
    ...(decode(user) && { username: decode(user) }),
    ...(decode(password) && { password: decode(password) }),
    ...(params.get('sentinelUsername') && { sentinelUsername: params.get('sentinelUsername')! }),
    ...(params.get('sentinelPassword') && { sentinelPassword: params.get('sentinelPassword')! }),
    ...(tls && { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true }),
  };
}

/** A client for any accepted REDIS_URL form; `options` add to (and win over) the URL's. */
export function createRedisClient(url: string, options: RedisOptions = {}): Redis {
  return isSentinelUrl(url)
    ? new Redis({ ...sentinelOptions(url), ...options })
    : new Redis(url, options);
}
