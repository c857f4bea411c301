// @anneal/control-plane: REST API, run lifecycle and scheduling onto pools.
export { buildApp, type AppDeps } from './app.ts';
export { type AppSettings, DEFAULT_SETTINGS } from './context.ts';
export { loadOperatorConfig, OperatorConfigError, type LoadedOperatorConfig } from './config.ts';
export { ControlPlaneEnv, ControlPlaneEnvError, parseEnv } from './env.ts';
export { AnnealError } from './errors.ts';
export { sha256Hex } from './plugins/auth.ts';
export { RedisUnreachableError, REDIS_HINT } from '@anneal/store';
export { startControlPlane, type RunningControlPlane, type StartOptions } from './server.ts';
