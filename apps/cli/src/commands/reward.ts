// `anneal reward score`: debug reward shaping on recorded rollouts (docs/recipe.md §4, §2). The input,
// config and output formats are a public contract, documented in apps/cli/README.md.
import { open, readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { InvalidArgumentError, type Command } from 'commander';
import { REWARD_DEFAULTS } from '../reward/defaults.ts';
import { parseRewardConfig } from '../reward/config.ts';
import { scoreGroupLines } from '../reward/score-stream.ts';
import { createStdoutWriter } from '../reward/stdout-writer.ts';

const CONFIG_HELP = `
Config keys (all optional; omitted keys take the GRPO run spec's defaults, i.e.
\`reward.*\` and \`advantage.normalizeStd\` of a \`kind: grpo\` run):
${Object.entries(REWARD_DEFAULTS)
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

interface ScoreOptions {
  config: string;
  input: string;
  seed: number;
}

async function openInput(command: Command, path: string): Promise<NodeJS.ReadableStream> {
  if (path === '-') return process.stdin;
  try {
    const handle = await open(path, 'r');
    if ((await handle.stat()).isDirectory()) {
      await handle.close();
      throw new Error('is a directory');
    }
    return handle.createReadStream({ encoding: 'utf8' });
  } catch (error) {
    return command.error(`error: cannot read --input '${path}': ${(error as Error).message}`, {
      exitCode: 2,
    });
  }
}

async function runScore(options: ScoreOptions, command: Command): Promise<void> {
  let configText: string;
  try {
    configText = await readFile(options.config, 'utf8');
  } catch (error) {
    return command.error(
      `error: cannot read --config '${options.config}': ${(error as Error).message}`,
      { exitCode: 2 },
    );
  }
  const parsedConfig = parseRewardConfig(configText);
  if (!parsedConfig.ok) {
    for (const { field, problem } of parsedConfig.problems)
      process.stderr.write(`${options.config}: ${field}: ${problem}\n`);
    process.exitCode = 2;
    return;
  }
  const input = await openInput(command, options.input);
  const lines = createInterface({ input, crlfDelay: Infinity });
  const stdout = createStdoutWriter(process.stdout);
  try {
    const summary = await scoreGroupLines(lines, parsedConfig.config, options.seed, {
      out: (line) => stdout.write(line),
      err: (line) => process.stderr.write(`${line}\n`),
    });
    if (summary.badLines > 0) process.exitCode = 2;
  } catch (error) {
    // e.g. the input stream failing mid-way: what was scored so far is still written (finally).
    process.stderr.write(
      `error: reading --input '${options.input}': ${(error as Error).message}\n`,
    );
    process.exitCode = 1;
  } finally {
    await stdout.end();
  }
}

export function register(program: Command): void {
  const reward = program.command('reward').description('reward shaping tools (docs/recipe.md §4)');
  reward
    .command('score')
    .description('score recorded GRPO groups: anchored penalties, gated reward, advantages')
    .requiredOption('--config <file>', 'reward config JSON (see below)')
    .requiredOption('--input <file>', 'groups as JSONL, one per line; "-" reads stdin')
    .option('--seed <n>', 'seed for the tool-call baselines b_g', parseSeed, 0)
    .addHelpText('after', (context) => (context.error ? '' : CONFIG_HELP)) // formats only on --help
    .action(async (options: ScoreOptions, command: Command) => runScore(options, command));
}
