// `anneal data validate|calibrate`: dataset checks and preparation before any GPU time is spent.
// Formats and rules: packages/envs/README.md ("Datasets", "Rubric calibration").
import { readFile, writeFile } from 'node:fs/promises';
import { InvalidArgumentError, type Command } from 'commander';
// The dataset checks come from the light `@anneal/envs/datasets` entry; calibration loads the
// package root (chat clients, judges, and the engines behind them) only when it runs.
import {
  DATASET_KINDS,
  type DatasetText,
  formatRowError,
  isDatasetKind,
  readDatasetFile,
  validateDatasetText,
  validateJsonl,
} from '@anneal/envs/datasets';
import type { DatasetKind, RubricPromptRow } from '@anneal/envs/datasets';
import type { ChatClient } from '@anneal/envs';
import { writeErr, writeOut } from '../ops/terminal-text.ts';

/** Invalid rows exit 2, like `anneal reward score` and usage errors. */
const EXIT_INVALID = 2;

function parseKind(value: string): DatasetKind {
  if (!isDatasetKind(value))
    throw new InvalidArgumentError(`must be one of ${DATASET_KINDS.join(', ')}.`);
  return value;
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('must be a positive integer.');
  return n;
}

function parseTemperature(value: string): number {
  const t = Number(value);
  if (!Number.isFinite(t) || t < 0) throw new InvalidArgumentError('must be a number >= 0.');
  return t;
}

async function readText(command: Command, path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    return command.error(`error: cannot read ${flag} '${path}': ${(error as Error).message}`, {
      exitCode: EXIT_INVALID,
    });
  }
}

async function runValidate(
  file: string,
  options: { kind: DatasetKind },
  command: Command,
): Promise<void> {
  // As the control plane and workers read it: a regular file, lines within 1 MiB, valid UTF-8.
  let read: DatasetText;
  try {
    read = await readDatasetFile(file);
  } catch (error) {
    return command.error(`error: cannot read FILE '${file}': ${(error as Error).message}`, {
      exitCode: EXIT_INVALID,
    });
  }
  const result = validateDatasetText(options.kind, read);
  for (const error of result.errors) writeErr(`${file}: ${formatRowError(error)}\n`);
  if (result.errors.length > 0) {
    writeErr(
      `${file}: ${result.errors.length} error(s); ${result.rows.length} valid ${options.kind} row(s)\n`,
    );
    process.exitCode = EXIT_INVALID;
    return;
  }
  writeOut(`${file}: ok, ${result.rows.length} ${options.kind} row(s)\n`);
}

interface CalibrateOptions {
  input: string;
  output: string;
  report?: string;
  k: number;
  samplerUrl: string;
  samplerModel: string;
  temperature: number;
  maxTokens: number;
  judgeUrl?: string;
  judgeModel?: string;
  concurrency: number;
}

/** k responses from an OpenAI-compatible chat endpoint; asks again when a server ignores `n`. */
function chatSampler(client: ChatClient, options: CalibrateOptions) {
  return async (row: RubricPromptRow, k: number, signal?: AbortSignal): Promise<string[]> => {
    const responses: string[] = [];
    while (responses.length < k) {
      const params = {
        n: k - responses.length,
        temperature: options.temperature,
        maxTokens: options.maxTokens,
      };
      responses.push(
        ...(await client.complete([{ role: 'user', content: row.prompt }], params, signal)),
      );
    }
    return responses.slice(0, k);
  };
}

async function runCalibrate(options: CalibrateOptions, command: Command): Promise<void> {
  const text = await readText(command, options.input, '--input');
  const validation = validateJsonl('rubric', text);
  if (validation.errors.length > 0) {
    for (const error of validation.errors) writeErr(`${options.input}: ${formatRowError(error)}\n`);
    return command.error(`error: ${options.input} has invalid rows; nothing was sampled`, {
      exitCode: EXIT_INVALID,
    });
  }
  if ((options.judgeUrl === undefined) !== (options.judgeModel === undefined)) {
    return command.error('error: give both --judge-url and --judge-model, or neither', {
      exitCode: EXIT_INVALID,
    });
  }
  const { calibrateRubricPrompts, ChatClient, LlmJudge } = await import('@anneal/envs');
  const sampler = new ChatClient('sampler', {
    baseUrl: options.samplerUrl,
    model: options.samplerModel,
    ...(process.env['ANNEAL_SAMPLER_API_KEY']
      ? { apiKey: process.env['ANNEAL_SAMPLER_API_KEY'] }
      : {}),
  });
  const judge =
    options.judgeUrl && options.judgeModel
      ? new LlmJudge('judge', {
          baseUrl: options.judgeUrl,
          model: options.judgeModel,
          ...(process.env['ANNEAL_JUDGE_API_KEY']
            ? { apiKey: process.env['ANNEAL_JUDGE_API_KEY'] }
            : {}),
        })
      : undefined;
  const rawLines = text.split(/\r?\n/);
  let results;
  try {
    results = await calibrateRubricPrompts(validation.rows, {
      k: options.k,
      sample: chatSampler(sampler, options),
      concurrency: options.concurrency,
      ...(judge ? { judge } : {}),
      onResult: (r, done, total) =>
        writeErr(
          `[${done}/${total}] line ${validation.lines[r.index]}: ${r.passes}/${r.k} passed${r.kept ? '' : ' (dropped)'}\n`,
        ),
    });
  } catch (error) {
    return command.error(`error: calibration failed: ${(error as Error).message}`, { exitCode: 1 });
  }
  const kept = results
    .filter((r) => r.kept)
    .map((r) => rawLines[(validation.lines[r.index] as number) - 1] as string);
  const keptText = kept.map((line) => `${line}\n`).join('');
  if (options.output === '-') writeOut(keptText);
  else await writeFile(options.output, keptText);
  if (options.report) {
    const report = results.map((r) =>
      JSON.stringify({ line: validation.lines[r.index], passes: r.passes, k: r.k, kept: r.kept }),
    );
    await writeFile(options.report, report.map((l) => `${l}\n`).join(''));
  }
  const allPass = results.filter((r) => r.passes === r.k).length;
  const nonePass = results.filter((r) => r.passes === 0).length;
  writeErr(
    `kept ${kept.length} of ${results.length} prompts (all ${options.k} passed: ${allPass}, none passed: ${nonePass})\n`,
  );
}

export function register(program: Command): void {
  const data = program
    .command('data')
    .description('Validate and prepare JSONL datasets before any GPU time is spent');

  data
    .command('validate')
    .description('Check every row of a JSONL dataset; errors name the line and field')
    .requiredOption('--kind <kind>', `dataset kind: ${DATASET_KINDS.join(' | ')}`, parseKind)
    .argument('<file>', 'JSONL file')
    .action((file: string, options: { kind: DatasetKind }, command: Command) =>
      runValidate(file, options, command),
    );

  data
    .command('calibrate')
    .description('Rubric pass@k calibration (docs/recipe.md §3): keep prompts where 0 < passes < k')
    .requiredOption('--input <file>', 'rubric prompts JSONL ({prompt, rubrics, reference?})')
    .requiredOption(
      '--sampler-url <url>',
      'OpenAI-compatible server that samples the k responses (key: ANNEAL_SAMPLER_API_KEY)',
    )
    .requiredOption('--sampler-model <name>', 'model name on the sampler')
    .option('--k <n>', 'responses per prompt', parsePositiveInt, 4)
    .option('--output <file>', "kept prompts as JSONL (input lines unchanged); '-' = stdout", '-')
    .option('--report <file>', 'per-prompt passes as JSONL')
    .option('--temperature <t>', 'sampling temperature', parseTemperature, 1)
    .option('--max-tokens <n>', 'max tokens per response', parsePositiveInt, 512)
    .option(
      '--judge-url <url>',
      'OpenAI-compatible LLM judge for rubrics without a programmatic check (key: ANNEAL_JUDGE_API_KEY)',
    )
    .option('--judge-model <name>', 'model name on the judge')
    .option('--concurrency <n>', 'prompts calibrated at once', parsePositiveInt, 4)
    .action((options: CalibrateOptions, command: Command) => runCalibrate(options, command));
}
