// REDIS_URL forms: plain, TLS, ACL user and Sentinel (several sentinels, primary name, db, TLS,
// sentinel credentials); malformed Sentinel URLs name the problem; passwords never printed.
import { describe, expect, it } from 'vitest';
import { redactRedisUrl } from './reachable.ts';
import { RedisUrlError, createRedisClient, isSentinelUrl, sentinelOptions } from './redis-url.ts';

const lazy = { lazyConnect: true };

describe('REDIS_URL forms', () => {
  it('rediss:// with an ACL user: TLS on, user and password passed to the client', () => {
    const client = createRedisClient('rediss://anneal:s3cret@redis.example:6380/2', lazy);
    expect(client.options).toMatchObject({
      host: 'redis.example',
      port: 6380,
      db: 2,
      username: 'anneal',
      password: 's3cret',
    });
    expect(client.options.tls).toBeDefined();
    expect(client.options.sentinels).toBeFalsy();
    client.disconnect();
  });

  it('redis+sentinel://: every sentinel, the primary name, db and both sets of credentials', () => {
    const url =
      'redis+sentinel://anneal:p%40ss@10.0.0.1:26379,10.0.0.2:26380,[::1]:26381/mymaster/3' +
      '?sentinelUsername=sentinel-user&sentinelPassword=sp';
    expect(isSentinelUrl(url)).toBe(true);
    expect(sentinelOptions(url)).toEqual({
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      name: 'mymaster',
      db: 3,
      username: 'anneal',
      password: 'p@ss',
      sentinelUsername: 'sentinel-user',
      sentinelPassword: 'sp',
    });
    const client = createRedisClient(url, { ...lazy, db: 1 });
    expect(client.options).toMatchObject({ name: 'mymaster', db: 1 }); // options win
    client.disconnect();
  });

  it('rediss+sentinel:// turns TLS on for the sentinels and the data nodes', () => {
    expect(sentinelOptions('rediss+sentinel://s1:26379/primary')).toMatchObject({
      tls: {},
      sentinelTLS: {},
      enableTLSForSentinelMode: true,
    });
  });

  it.each([
    ['redis+sentinel://s1:26379', /primary name/],
    ['redis+sentinel://s1/mymaster', /sentinel 's1' needs host:port/],
    ['redis+sentinel://s1:99999/mymaster', /'99999' is not a port/],
    ['redis+sentinel://s1:26379/mymaster?tls=1', /unknown parameter 'tls'/],
  ])('%s is refused: %s', (url, reason) => {
    expect(() => sentinelOptions(url)).toThrow(RedisUrlError);
    expect(() => sentinelOptions(url)).toThrow(reason);
  });

  it('passwords are redacted, also in URLs that URL cannot parse', () => {
    expect(redactRedisUrl('redis+sentinel://u:hunter2@a:1,b:2/m?sentinelPassword=hunter3')).toBe(
      'redis+sentinel://u:***@a:1,b:2/m?sentinelPassword=***',
    );
    expect(redactRedisUrl('rediss://u:hunter2@host:6380')).toBe('rediss://u:***@host:6380');
    expect(() => sentinelOptions('redis+sentinel://u:hunter2@a/m')).toThrow(/u:\*\*\*@/);
  });
});
