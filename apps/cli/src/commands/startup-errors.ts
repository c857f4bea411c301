// How `anneal control-plane` / `anneal up` report a failed start: a known cause (Redis
// unreachable, a bad operator config or environment) is one clean message on stderr, no stack
// trace; anything else is rethrown (a bug, whose stack trace helps).
import { writeErr } from '../ops/terminal-text.ts';
const controlPlaneApp = () => import('@anneal/control-plane');

/** Exit codes: 2 = fix your configuration, 1 = a dependency (Redis) is not there. */
export async function exitOnStartupError(error: unknown): Promise<never> {
  const { ControlPlaneEnvError, OperatorConfigError, REDIS_HINT, RedisUnreachableError } =
    await controlPlaneApp();
  if (error instanceof RedisUnreachableError) {
    writeErr(`anneal: ${error.message} (${REDIS_HINT})\n`);
    process.exit(1);
  }
  if (error instanceof OperatorConfigError || error instanceof ControlPlaneEnvError) {
    writeErr(`anneal: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}
