// How `anneal control-plane` / `anneal up` report a failed start: a known cause (Redis
// unreachable, a bad operator config or environment) is one clean message on stderr, no stack
// trace; anything else is rethrown (a bug, whose stack trace helps).
const controlPlaneApp = () => import('@anneal/control-plane');

/** Exit codes: 2 = fix your configuration, 1 = a dependency (Redis) is not there. */
export async function exitOnStartupError(error: unknown): Promise<never> {
  const { ControlPlaneEnvError, OperatorConfigError, REDIS_HINT, RedisUnreachableError } =
    await controlPlaneApp();
  if (error instanceof RedisUnreachableError) {
    process.stderr.write(`anneal: ${error.message} (${REDIS_HINT})\n`);
    process.exit(1);
  }
  if (error instanceof OperatorConfigError || error instanceof ControlPlaneEnvError) {
    process.stderr.write(`anneal: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}
