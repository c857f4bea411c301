// Child process of the fleet bench: the real control plane (startControlPlane: environment,
// operator config file, tenant limits written by its start-up reconcile, enqueue relay, HTTP on
// an ephemeral port), in its own process so that it does not share an event loop with the load
// generator. Prints one JSON line {url}; IPC `report` answers with its CPU time; closes
// gracefully on SIGTERM.
import { parseEnv, startControlPlane } from '@anneal/control-plane';
import { type ChildMessage, type ChildRequest, cpuMs } from './executions.ts';

const running = await startControlPlane({ env: parseEnv(process.env) });
process.on('message', (request: ChildRequest) => {
  if (request.type === 'report') {
    const reply: ChildMessage = { type: 'report', executions: [], cpuMs: cpuMs() };
    process.send?.(reply);
  }
});
// The bench is gone (crashed, killed): so is its control plane.
process.once('disconnect', () => process.exit(1));
process.stdout.write(`${JSON.stringify({ url: running.url })}\n`);
process.once('SIGTERM', () => {
  void running.close().then(() => process.exit(0));
});
