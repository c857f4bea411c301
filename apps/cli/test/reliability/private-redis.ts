// A private redis-server for fault tests (killed and restarted, later a replica and Sentinels):
// @anneal/testing's startRedisServer with the append-only file fsynced on every write
// (`appendfsync always`), so whatever a client saw acknowledged survives a kill -9.
import { type RedisServer, startRedisServer } from '@anneal/testing';

export { redisServerBinary } from '@anneal/testing';
export type PrivateRedis = RedisServer;

export function startPrivateRedis(binary: string, extraArgs: string[] = []): Promise<PrivateRedis> {
  return startRedisServer({
    binary,
    args: ['--appendonly', 'yes', '--appendfsync', 'always', ...extraArgs],
  });
}
