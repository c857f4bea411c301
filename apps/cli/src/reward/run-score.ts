// `anneal reward score`'s work (commands/reward.ts registers the command): read the config and the
// groups, score each group, write one line per group. Loaded when the command runs, with @anneal/rl
// and the run spec's schemas.
import { open, readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { parseRewardConfig } from './config.ts';
import { scoreGroupLines } from './score-stream.ts';
import { createStdoutWriter } from './stdout-writer.ts';

export interface ScoreOptions {
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

export async function runScore(options: ScoreOptions, command: Command): Promise<void> {
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
