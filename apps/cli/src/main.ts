// The `anneal` command. Each command family lives in src/commands/<name>.ts and exports
// `register(program)`; this file only wires them.
import { Command } from 'commander';
import { register as registerData } from './commands/data.ts';
import { register as registerDemo } from './commands/demo.ts';
import { register as registerEndpoints } from './commands/endpoints.ts';
import { register as registerControlPlane } from './commands/control-plane.ts';
import { register as registerPools } from './commands/pools.ts';
import { register as registerReward } from './commands/reward.ts';
import { register as registerRuns } from './commands/runs.ts';
import { register as registerServe } from './commands/serve.ts';
import { register as registerSweeps } from './commands/sweeps.ts';
import { register as registerWorker } from './commands/worker.ts';
import { register as registerWorkers } from './commands/workers.ts';

const program = new Command('anneal')
  .description('Anneal: RL post-training orchestrator (SFT -> reward model -> GRPO -> eval)')
  .showHelpAfterError()
  .exitOverride((err) => {
    // Usage errors (unknown flags, missing arguments) exit 2, like other Unix tools.
    process.exit(err.exitCode === 0 ? 0 : 2);
  });

registerData(program);
registerReward(program);
registerControlPlane(program);
registerRuns(program);
registerSweeps(program);
registerWorker(program);
registerPools(program);
registerWorkers(program);
registerEndpoints(program);
registerDemo(program);
registerServe(program);

await program.parseAsync(process.argv);
