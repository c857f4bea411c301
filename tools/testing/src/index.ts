export { chromiumPath } from './chromium.ts';
export { eventually } from './eventually.ts';
export { freePort } from './free-port.ts';
export {
  type RedisServer,
  type RedisServerOptions,
  redisServerBinary,
  startRedisServer,
  waitForPing,
} from './redis-server.ts';
