// A GRPO run's rollouts (GET /v1/runs/{id}/rollouts[/{rolloutId}]) from its rollout ledger, read
// by the store's reader (@anneal/store rollout-ledger/read.ts) through the file cache: filters and sort keys come from each step's index, so a page
// inflates only the groups whose records it shows — or, with a filter on the records' text
// (grep, tool errors), the groups it scans in order until the page is full.
import {
  type LedgerStepIndex,
  type ListedRollout,
  type RolloutPage,
  type RolloutIndexEntry,
  type RolloutRecord,
  type RolloutFinishReason,
  type RolloutRole,
  parseRolloutId,
  withDeprecatedRolloutNames,
} from '@anneal/protocol';
import {
  committedSteps,
  getRun,
  ledgerIndexFile,
  listLedgerSteps,
  parseLedgerIndex,
  readLedgerGroup,
  runArtifactDir,
  stepDir,
} from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';
import {
  type Position,
  type SortOrder,
  comparePositions,
  decodeCursor,
  encodeCursor,
  firstInOrder,
  listingDigest,
} from '../../infra/record-page.ts';

export const ROLLOUT_SORTS = ['reward', 'advantage', 'ratio', 'length', 'toolCalls'] as const;
export type RolloutSort = (typeof ROLLOUT_SORTS)[number];

export interface RolloutQuery {
  step?: number;
  role?: RolloutRole;
  /** One prompt (its stable promptId) across steps. */
  prompt?: string;
  finish?: RolloutFinishReason;
  minReward?: number;
  maxReward?: number;
  hasToolCalls?: boolean;
  hasToolErrors?: boolean;
  /** Case-insensitive text in the prompt, a turn, a tool call or the answer. */
  grep?: string;
  sort?: RolloutSort;
  order: SortOrder;
  limit: number;
  cursor?: string;
}

/** Rollouts one request reads records of, at most, under a text filter (grep, tool errors): a
 * rare match must not make one request inflate a whole run. The page then holds fewer than
 * `limit` rollouts and its cursor goes on from the last one read. */
export const MAX_SCANNED = 4096;

/** Compressed JSON lines inflate to several times their size: the cache budget counts this much. */
const INFLATION = 8;

const pad = (n: number) => n.toString().padStart(10, '0');

const SORT_KEYS: Record<RolloutSort, (e: RolloutIndexEntry) => number | null> = {
  reward: (e) => e.reward,
  advantage: (e) => e.advantage,
  ratio: (e) => e.ratio,
  length: (e) => e.length,
  toolCalls: (e) => e.toolCalls,
};

interface Candidate {
  step: LoadedStep;
  entry: RolloutIndexEntry;
  at: Position;
}

interface LoadedStep {
  index: LedgerStepIndex;
  version: string;
}

/** The run, checked to be the caller's and a GRPO run, and its directory. */
async function grpoRunDir(ctx: AppContext, tenant: string, runId: string): Promise<string> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  if (run.kind !== 'grpo') {
    throw new AnnealError(
      'ANNEAL_ERR_NOT_FOUND',
      `run '${runId}' is a ${run.kind} run; rollouts are recorded for grpo runs only`,
    );
  }
  return runArtifactDir(ctx.artifactDir, runId);
}

/** The ledger's steps that Redis holds committed (a rollback takes steps back out). */
async function readableSteps(ctx: AppContext, runId: string, runDir: string): Promise<number[]> {
  const [ledger, committed] = await Promise.all([
    listLedgerSteps(runDir),
    committedSteps(ctx.store, runId),
  ]);
  const inRedis = new Set(committed);
  return ledger.filter((step) => inRedis.has(step));
}

async function loadStep(ctx: AppContext, runDir: string, step: number): Promise<LoadedStep | null> {
  const file = ledgerIndexFile(runDir, step);
  const read = await ctx.files.readVersioned(file, (contents) =>
    parseLedgerIndex(contents.toString('utf8'), file),
  );
  return read ? { index: read.value, version: read.version } : null;
}

/** The group's records, cached under the index's version (a pruned step gets a new index). */
function groupRecords(
  ctx: AppContext,
  runDir: string,
  step: LoadedStep,
  group: number,
): Promise<RolloutRecord[] | null> {
  const extent = step.index.extents.find((e) => e.group === group);
  if (!extent) return Promise.resolve(null);
  return ctx.files.derived(
    `${stepDir(runDir, step.index.step)}#${group}`,
    step.version,
    extent.length * INFLATION,
    () => readLedgerGroup(runDir, step.index, group),
  );
}

/** Each index entry's tie-break, natural order (step, group, policy before reference, index);
 * kept with the parsed index, which the file cache holds while the file is unchanged. */
const tieCache = new WeakMap<LedgerStepIndex, string[]>();
function tiesOf(index: LedgerStepIndex): string[] {
  let ties = tieCache.get(index);
  if (!ties) {
    ties = index.rollouts.map(
      (e) => `${pad(index.step)}-${pad(e.group)}-${e.role === 'policy' ? 0 : 1}-${pad(e.index)}`,
    );
    tieCache.set(index, ties);
  }
  return ties;
}

function entryMatches(e: RolloutIndexEntry, q: RolloutQuery): boolean {
  return (
    (q.role === undefined || e.role === q.role) &&
    (q.prompt === undefined || e.promptId === q.prompt) &&
    (q.finish === undefined || e.finish === q.finish) &&
    (q.minReward === undefined || (e.reward !== null && e.reward >= q.minReward)) &&
    (q.maxReward === undefined || (e.reward !== null && e.reward <= q.maxReward)) &&
    (q.hasToolCalls === undefined || e.toolCalls > 0 === q.hasToolCalls)
  );
}

function recordText(r: RolloutRecord): string {
  const turns = r.turns.flatMap((t) => [
    t.assistant,
    ...t.calls.flatMap((c) => [c.name, c.arguments.query, c.result, c.error ?? '']),
  ]);
  return [r.prompt.text, ...turns, r.answer ?? ''].join('\n').toLowerCase();
}

function recordMatches(r: RolloutRecord, q: RolloutQuery): boolean {
  return (
    (q.hasToolErrors === undefined || r.toolErrors > 0 === q.hasToolErrors) &&
    (q.grep === undefined || recordText(r).includes(q.grep.toLowerCase()))
  );
}

/** A record as the API lists it: no token ids and logprobs, and until DEPRECATED_NAMES_UNTIL the
 * old names beside the new ones (docs/recipe.md "Renamed fields"). */
const listed = ({ tokens: _tokens, ...rest }: RolloutRecord): ListedRollout =>
  withDeprecatedRolloutNames(rest);

export async function rolloutPage(
  ctx: AppContext,
  tenant: string,
  runId: string,
  q: RolloutQuery,
): Promise<RolloutPage> {
  const runDir = await grpoRunDir(ctx, tenant, runId);
  const { cursor, limit, ...listing } = q;
  const digest = listingDigest(listing);
  const after = cursor === undefined ? undefined : decodeCursor(cursor, digest);
  const steps = (await readableSteps(ctx, runId, runDir)).filter(
    (s) => q.step === undefined || s === q.step,
  );
  const loaded = (await Promise.all(steps.map((s) => loadStep(ctx, runDir, s)))).filter(
    (s): s is LoadedStep => s !== null,
  );
  const key = q.sort ? SORT_KEYS[q.sort] : () => null;
  const candidates: Candidate[] = [];
  for (const step of loaded) {
    const kept = new Set(step.index.extents.map((e) => e.group));
    const s = step.index.step;
    const ties = tiesOf(step.index);
    for (const [i, entry] of step.index.rollouts.entries()) {
      if (!kept.has(entry.group) || !entryMatches(entry, q)) continue;
      const at = { key: q.sort ? key(entry) : s, tie: ties[i]! };
      if (after && comparePositions(at, after, q.order) <= 0) continue;
      candidates.push({ step, entry, at });
    }
  }
  // Without a text filter, every candidate is shown: the first page + 1 decides; with one, up
  // to MAX_SCANNED are read, in order.
  const textFilter = q.grep !== undefined || q.hasToolErrors !== undefined;
  const ordered = firstInOrder(candidates, (textFilter ? MAX_SCANNED : limit) + 1, (a, b) =>
    comparePositions(a.at, b.at, q.order),
  );
  const rollouts: ListedRollout[] = [];
  let last: Position | null = null;
  let more = false;
  let scanned = 0;
  for (const c of ordered) {
    if (rollouts.length === limit || scanned === MAX_SCANNED) {
      more = true;
      break;
    }
    scanned++;
    const records = await groupRecords(ctx, runDir, c.step, c.entry.group);
    const record = records?.find((r) => r.id === c.entry.id);
    last = c.at;
    if (record && recordMatches(record, q)) rollouts.push(listed(record));
  }
  return {
    runId,
    rollouts,
    nextCursor: more && last ? encodeCursor(last, digest) : null,
  };
}

export async function rolloutById(
  ctx: AppContext,
  tenant: string,
  runId: string,
  rolloutId: string,
): Promise<RolloutRecord> {
  const runDir = await grpoRunDir(ctx, tenant, runId);
  const missing = () =>
    new AnnealError('ANNEAL_ERR_NOT_FOUND', `no rollout '${rolloutId}' in run '${runId}'`);
  const parsed = parseRolloutId(rolloutId);
  if (!parsed) throw missing();
  if (!(await readableSteps(ctx, runId, runDir)).includes(parsed.step)) throw missing();
  const step = await loadStep(ctx, runDir, parsed.step);
  if (!step) throw missing();
  const records = await groupRecords(ctx, runDir, step, parsed.group);
  const record = records?.find((r) => r.id === rolloutId);
  if (!record) throw missing();
  return withDeprecatedRolloutNames(record);
}
