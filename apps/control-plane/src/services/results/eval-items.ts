// An eval run's answers, one page at a time (GET /v1/runs/{id}/items): the lines of
// eval-items.jsonl in the run's artifact directory, filtered, sorted and paged by keyset.
// Only lines of committed cells are served: the worker appends a cell's lines before it commits
// the cell's step, so a killed attempt can leave lines the retry answers again.
import path from 'node:path';
import {
  EvalItem,
  type EvalItemPage,
  type RolloutFinishReason,
  parseStoredLine,
} from '@anneal/protocol';
import { EVAL_ITEMS_FILE, committedSteps, getRun, runArtifactDir } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';
import {
  type Position,
  type SortOrder,
  decodeCursor,
  encodeCursor,
  listingDigest,
  pageRecords,
} from '../../infra/record-page.ts';

export const ITEM_SORTS = ['reward', 'toolCalls', 'length', 'promptTokens'] as const;
export type ItemSort = (typeof ITEM_SORTS)[number];

export interface EvalItemQuery {
  step?: number;
  checkpoint?: number;
  budget?: number;
  /** The question id: one question across checkpoints and budgets. */
  prompt?: string;
  correct?: boolean;
  abstained?: boolean;
  finish?: RolloutFinishReason;
  hasToolCalls?: boolean;
  /** Case-insensitive substring of the answer. */
  grep?: string;
  sort?: ItemSort;
  order: SortOrder;
  limit: number;
  cursor?: string;
}

/** An item and its line number among its step's lines (stable once the step is committed). */
interface Line {
  item: EvalItem;
  ordinal: number;
}

function parseLines(file: string, contents: Buffer): Line[] {
  const lines: Line[] = [];
  const perStep = new Map<number, number>();
  for (const [n, text] of contents.toString('utf8').split('\n').entries()) {
    if (text.length === 0) continue;
    const item = parseStoredLine(EvalItem, text, () => `${file} line ${n + 1}`);
    if (item === undefined) continue; // the line a killed worker was writing
    const ordinal = perStep.get(item.step) ?? 0;
    perStep.set(item.step, ordinal + 1);
    lines.push({ item, ordinal });
  }
  return lines;
}

const SORT_KEYS: Record<ItemSort, (item: EvalItem) => number | null> = {
  reward: (item) => item.reward ?? null,
  toolCalls: (item) => item.toolCalls,
  length: (item) => item.completionTokens,
  promptTokens: (item) => item.promptTokens,
};

const pad = (n: number) => n.toString().padStart(10, '0');

function matches(item: EvalItem, q: EvalItemQuery): boolean {
  const grep = q.grep?.toLowerCase();
  return (
    (q.step === undefined || item.step === q.step) &&
    (q.checkpoint === undefined || item.checkpoint === q.checkpoint) &&
    (q.budget === undefined || item.budget === q.budget) &&
    (q.prompt === undefined || item.id === q.prompt) &&
    (q.correct === undefined || item.correct === q.correct) &&
    (q.abstained === undefined || item.abstained === q.abstained) &&
    (q.finish === undefined || item.finish === q.finish) &&
    (q.hasToolCalls === undefined || item.toolCalls > 0 === q.hasToolCalls) &&
    (grep === undefined || (item.answer ?? '').toLowerCase().includes(grep))
  );
}

export async function evalItemPage(
  ctx: AppContext,
  tenant: string,
  runId: string,
  q: EvalItemQuery,
): Promise<EvalItemPage> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  if (run.kind !== 'eval') {
    throw new AnnealError(
      'ANNEAL_ERR_NOT_FOUND',
      `run '${runId}' is a ${run.kind} run; items exist for eval runs only`,
    );
  }
  const { cursor, limit, ...listing } = q;
  const digest = listingDigest(listing);
  const after = cursor === undefined ? undefined : decodeCursor(cursor, digest);
  const file = path.join(runArtifactDir(ctx.artifactDir, runId), EVAL_ITEMS_FILE);
  const [lines, committed] = await Promise.all([
    ctx.files.read(file, (contents) => parseLines(file, contents)),
    committedSteps(ctx.store, runId),
  ]);
  const steps = new Set(committed);
  const kept = (lines ?? []).filter(({ item }) => steps.has(item.step) && matches(item, q));
  const key = q.sort ? SORT_KEYS[q.sort] : (item: EvalItem) => item.step;
  const position = ({ item, ordinal }: Line): Position => ({
    key: key(item),
    tie: `${pad(item.step)}:${pad(ordinal)}`,
  });
  const page = pageRecords(kept, {
    position,
    order: q.order,
    limit,
    ...(after && { after }),
  });
  return {
    runId,
    items: page.records.map((line) => line.item),
    nextCursor: page.next ? encodeCursor(page.next, digest) : null,
  };
}
