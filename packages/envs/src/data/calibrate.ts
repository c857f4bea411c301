// Rubric calibration (docs/recipe.md §3, pass@k filter): sample k responses per rubric prompt, judge
// each against the full rubric set, keep prompts where some but not all pass (0 < passes < k).
// Prompts every sample passes (or none does) give GRPO groups with zero advantage.
import { keepForCalibration } from '@anneal/rl';
import type { RubricJudge } from '../rubrics/judge.ts';
import { MissingJudgeError, rubricsPass } from '../rubrics/evaluate.ts';
import type { RubricPromptRow } from './schemas.ts';

export interface CalibrationOptions {
  k: number;
  /** k responses for the prompt (e.g. from the policy being trained). */
  sample: (row: RubricPromptRow, k: number, signal?: AbortSignal) => Promise<string[]>;
  /** Needed when some rubric has no programmatic check. */
  judge?: RubricJudge;
  /** Prompts calibrated at the same time (default 4). */
  concurrency?: number;
  signal?: AbortSignal;
  /** Called after each prompt (progress display). */
  onResult?: (result: CalibrationResult, done: number, total: number) => void;
}

export interface CalibrationResult {
  row: RubricPromptRow;
  index: number;
  passes: number;
  k: number;
  kept: boolean;
}

async function calibrateOne(
  row: RubricPromptRow,
  index: number,
  options: CalibrationOptions,
): Promise<CalibrationResult> {
  const responses = await options.sample(row, options.k, options.signal);
  if (responses.length !== options.k) {
    throw new Error(
      `prompt ${index + 1}: sampler returned ${responses.length} responses, expected ${options.k}`,
    );
  }
  const verdicts = await Promise.all(
    responses.map((response) =>
      rubricsPass({
        prompt: row.prompt,
        response,
        rubrics: row.rubrics,
        ...(options.judge ? { judge: options.judge } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      }),
    ),
  );
  const passes = verdicts.filter(Boolean).length;
  return { row, index, passes, k: options.k, kept: keepForCalibration(passes, options.k) };
}

/** Calibrate every prompt (bounded concurrency); results in input order. */
export async function calibrateRubricPrompts(
  rows: readonly RubricPromptRow[],
  options: CalibrationOptions,
): Promise<CalibrationResult[]> {
  if (!Number.isInteger(options.k) || options.k < 2)
    throw new RangeError(`k must be an integer >= 2, got ${options.k}`);
  // Fail before any sampling when a free-text rubric has no judge to grade it.
  const unjudgeable = options.judge
    ? undefined
    : rows.flatMap((r) => r.rubrics).find((r) => !r.check);
  if (unjudgeable) {
    throw new MissingJudgeError(
      `rubric "${unjudgeable.text}" has no programmatic check and no judge endpoint is configured`,
    );
  }
  const results = new Array<CalibrationResult>(rows.length);
  let nextIndex = 0;
  let done = 0;
  const worker = async () => {
    while (nextIndex < rows.length) {
      const index = nextIndex++;
      const result = await calibrateOne(rows[index] as RubricPromptRow, index, options);
      results[index] = result;
      options.onResult?.(result, ++done, rows.length);
    }
  };
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 4, rows.length));
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}
