// `anneal reward score`: debug reward shaping on recorded rollouts (docs/recipe.md §4, §2). The input,
// config and output formats are a public contract, documented in apps/cli/README.md.
// The scoring (reward/run-score.ts) and the defaults (read from the run spec's schemas) load when
// a `reward` command runs or shows its help, not on every start of the CLI (bench/startup).
import { InvalidArgumentError, type Command } from 'commander';
import type { RewardConfig } from '@anneal/rl';
import type { ScoreOptions } from '../reward/run-score.ts';

const configHelp = (defaults: Readonly<RewardConfig>) => `
Config keys (all optional; omitted keys take the GRPO run spec's defaults, i.e.
\`reward.*\` and \`advantage.normalizeStd\` of a \`kind: grpo\` run):
${Object.entries(defaults)
  .map(([key, value]) => `  ${key.padEnd(13)}${JSON.stringify(value)}`)
  .join('\n')}

Input: one GRPO group per line:
  {"group": "<id>", "rollouts": [{"baseReward": 0|1, "preferenceScore": <0..1>, "toolCalls": <int>,
   "toolErrors": <int>, "length": <int>, "refLength": <int>}, ...]}
  (counts are integers in [0, 2147483647])
Output: one line per valid group, in input order:
  {"group", "toolBaseline": <number|null>, "rollouts": [{"toolPenalty", "lengthPenalty",
   "efficiencyPenalty", "reward", "advantage"}, ...]}
Bad lines are reported on stderr as "line N: <field>: <problem>", the other lines are still
scored, and the exit code is 2. Each group's tool baseline is drawn from (seed, group id).`;

function parseSeed(value: string): number {
  const seed = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(seed))
    throw new InvalidArgumentError('must be an integer with |n| <= 2^53 - 1.');
  return seed;
}

export function register(program: Command): void {
  let defaults: Readonly<RewardConfig> | undefined;
  const reward = program.command('reward').description('reward shaping tools (docs/recipe.md §4)');
  // Before `reward` parses anything — `reward score --help` and `reward help score` included —
  // the defaults its score help lists.
  program.hook('preSubcommand', async (_program, subcommand) => {
    if (subcommand === reward) defaults ??= (await import('../reward/defaults.ts')).REWARD_DEFAULTS;
  });
  reward
    .command('score')
    .description('score recorded GRPO groups: anchored penalties, gated reward, advantages')
    .requiredOption('--config <file>', 'reward config JSON (see below)')
    .requiredOption('--input <file>', 'groups as JSONL, one per line; "-" reads stdin')
    .option('--seed <n>', 'seed for the tool-call baselines b_g', parseSeed, 0)
    // formats only on --help
    .addHelpText('after', (context) => (context.error || !defaults ? '' : configHelp(defaults)))
    .action(async (options: ScoreOptions, command: Command) =>
      (await import('../reward/run-score.ts')).runScore(options, command),
    );
}
