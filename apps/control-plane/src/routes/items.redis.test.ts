// GET /v1/runs/{id}/items: an eval run's eval-items.jsonl (lines in the protocol's EvalItem
// shape, the worker's format) on real files under the plane's artifact root, with the run's
// committed steps in a real Redis: only committed cells, filters, sort, keyset paging that
// stays stable while cells are added, tenant scope and bad parameters named.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EvalItem, EvalItemPage } from '@anneal/protocol';
import { EVAL_ITEMS_FILE, appendStep, runArtifactDir, startRun } from '@anneal/store';
import { TOKENS, type TestPlane, auth, submit, testPlane } from '../../test/helpers.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

const get = (url: string, token: string = TOKENS.acmeViewer) =>
  plane.app.inject({ method: 'GET', url, headers: auth(token) });

const QUESTIONS = ['q-capital', 'q-river', 'q-moon', 'q-prime'];

/** The items of cell `step` (checkpoint step-1 >> 1, budget step-1 & 1): varied on purpose. */
function cellItems(step: number): EvalItem[] {
  return QUESTIONS.map((id, q) => ({
    step,
    checkpoint: (step - 1) >> 1,
    budget: (step - 1) & 1,
    id,
    correct: (q + step) % 3 !== 0,
    grader: 'verifier',
    answer: q === 3 ? null : `answer ${id} at step ${step}${q === 1 ? ' Danube' : ''}`,
    abstained: q === 3,
    languageMismatch: false,
    toolCalls: (q * 7 + step * 3) % 5,
    searchCalls: 0,
    brokenCalls: 0,
    finish: q === 3 ? 'no_answer' : 'answer',
    promptTokens: 100 + q * 10 + step,
    completionTokens: 20 + ((q * 13 + step * 5) % 17),
    attempt: 1,
    ...(q !== 2 && { reward: (q - 1.5) * step * 0.25 }),
  }));
}

const lines = (items: EvalItem[]) => items.map((x) => JSON.stringify(x) + '\n').join('');

async function evalRun(
  token: string = TOKENS.acmeSubmitter,
): Promise<{ id: string; file: string }> {
  const res = await submit(plane.app, 'kind: eval\nendpoints: {trainer: embedded}\n', { token });
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json().id as string;
  await startRun(plane.store, id, 'w1');
  const dir = runArtifactDir(plane.artifactDir, id);
  await mkdir(dir, { recursive: true });
  return { id, file: path.join(dir, EVAL_ITEMS_FILE) };
}

/** Writes cells 1..n and commits them, then `uncommitted` more cells' lines without a commit
 * and half a line (a worker killed while writing). */
async function writeCells(run: { id: string; file: string }, n: number, uncommitted = 0) {
  const committed = Array.from({ length: n }, (_, i) => cellItems(i + 1)).flat();
  const partial = Array.from({ length: uncommitted }, (_, i) => cellItems(n + 1 + i)).flat();
  await writeFile(run.file, lines(committed) + lines(partial) + '{"step":9,"checkp');
  for (let step = 1; step <= n; step++) await appendStep(plane.store, run.id, step, { n: 4 });
  return committed;
}

/** Every page of a listing, from `cursor` on. */
async function all(url: string, from: string | null = null): Promise<EvalItem[]> {
  const items: EvalItem[] = [];
  let cursor = from;
  do {
    const sep = url.includes('?') ? '&' : '?';
    const res = await get(cursor ? `${url}${sep}cursor=${cursor}` : url);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json<EvalItemPage>();
    expect(Value.Check(EvalItemPage, page)).toBe(true);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

const key = (x: EvalItem) => `${x.step}/${x.id}`;

describe('GET /v1/runs/{id}/items', () => {
  it('serves the committed cells only, in cell order, every page valid against the schema', async () => {
    const run = await evalRun();
    const committed = await writeCells(run, 3, 1);
    for (const item of committed) expect(Value.Check(EvalItem, item)).toBe(true);
    const got = await all(`/v1/runs/${run.id}/items?limit=5`);
    expect(got.map(key)).toEqual(committed.map(key));
    expect(got).toEqual(committed);
  });

  it('filters: one question across cells, correctness, tool calls, finish, grep', async () => {
    const run = await evalRun();
    const items = await writeCells(run, 4);
    const base = `/v1/runs/${run.id}/items`;
    expect((await all(`${base}?prompt=q-river`)).map(key)).toEqual(
      items.filter((x) => x.id === 'q-river').map(key),
    );
    expect((await all(`${base}?correct=false&checkpoint=1`)).map(key)).toEqual(
      items.filter((x) => !x.correct && x.checkpoint === 1).map(key),
    );
    expect((await all(`${base}?hasToolCalls=false`)).map(key)).toEqual(
      items.filter((x) => x.toolCalls === 0).map(key),
    );
    expect((await all(`${base}?finish=no_answer&budget=1`)).map(key)).toEqual(
      items.filter((x) => x.finish === 'no_answer' && x.budget === 1).map(key),
    );
    expect((await all(`${base}?grep=danube&step=2`)).map(key)).toEqual(['2/q-river']);
  });

  it('sorts by a key in either order, nulls last, pages without repeats', async () => {
    const run = await evalRun();
    const items = await writeCells(run, 4);
    const base = `/v1/runs/${run.id}/items`;
    const byReward = await all(`${base}?sort=reward&order=desc&limit=3`);
    expect(byReward).toHaveLength(items.length);
    const rewards = byReward.map((x) => x.reward ?? null);
    const scored = rewards.filter((r): r is number => r !== null);
    expect(scored).toEqual([...scored].sort((a, b) => b - a));
    expect(rewards.slice(scored.length).every((r) => r === null)).toBe(true);
    const byLength = await all(`${base}?sort=length&limit=4`);
    const lengths = byLength.map((x) => x.completionTokens);
    expect(lengths).toEqual([...lengths].sort((a, b) => a - b));
    expect(new Set(byLength.map(key)).size).toBe(items.length);
  });

  it('keeps a cursor stable while the run commits more cells', async () => {
    const run = await evalRun();
    const first = await writeCells(run, 2);
    const res = await get(`/v1/runs/${run.id}/items?sort=toolCalls&order=desc&limit=3`);
    const page = res.json<EvalItemPage>();
    expect(page.nextCursor).not.toBeNull();
    await writeFile(run.file, lines(first) + lines(cellItems(3)));
    await appendStep(plane.store, run.id, 3, { n: 4 });
    const rest = await all(
      `/v1/runs/${run.id}/items?sort=toolCalls&order=desc&limit=3`,
      page.nextCursor,
    );
    const seen = [...page.items, ...rest].map(key);
    expect(new Set(seen).size).toBe(seen.length); // nothing twice
    for (const item of first) expect(seen).toContain(key(item)); // nothing of before lost
    const last = page.items.at(-1)!;
    // the new cell's items appear only if they sort after the cursor (fewer tool calls: on a
    // tie, a later cell comes first in descending order, so before the cursor)
    for (const item of cellItems(3)) {
      expect(seen.includes(key(item)), key(item)).toBe(item.toolCalls < last.toolCalls);
    }
  });

  it("answers 404 for another tenant's run and for runs of other kinds", async () => {
    const run = await evalRun();
    await writeCells(run, 1);
    const other = await get(`/v1/runs/${run.id}/items`, TOKENS.betaSubmitter);
    expect(other.statusCode).toBe(404);
    expect(other.json().code).toBe('ANNEAL_ERR_RUN_NOT_FOUND');
    const grpo = await submit(plane.app, 'kind: grpo\n');
    const notEval = await get(`/v1/runs/${grpo.json().id}/items`);
    expect(notEval.statusCode).toBe(404);
    expect(notEval.json()).toMatchObject({ code: 'ANNEAL_ERR_NOT_FOUND' });
    const empty = await evalRun();
    expect((await get(`/v1/runs/${empty.id}/items`)).json()).toEqual({
      runId: empty.id,
      items: [],
      nextCursor: null,
    });
  });

  it('names the bad parameter in a problem', async () => {
    const run = await evalRun();
    await writeCells(run, 2);
    const base = `/v1/runs/${run.id}/items`;
    const cases: Array<[string, string]> = [
      ['sort=bogus', '/query/sort'],
      ['order=up', '/query/order'],
      ['limit=0', '/query/limit'],
      ['step=zero', '/query/step'],
      ['finish=maybe', '/query/finish'],
      ['cursor=not-a-cursor', '/query/cursor'],
      ['color=red', '/query/color'],
    ];
    for (const [query, pointer] of cases) {
      const res = await get(`${base}?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().code).toBe('ANNEAL_ERR_VALIDATION');
      expect(
        res.json().errors.map((e: { path: string }) => e.path),
        query,
      ).toContain(pointer);
    }
    // a cursor is valid only with the listing it came from
    const page = (await get(`${base}?limit=2`)).json<EvalItemPage>();
    const reused = await get(`${base}?limit=2&sort=reward&cursor=${page.nextCursor}`);
    expect(reused.statusCode).toBe(400);
    expect(reused.json().errors[0]).toMatchObject({ path: '/query/cursor' });
    // the page size is not part of the listing: a cursor goes on with another limit
    expect((await get(`${base}?limit=3&cursor=${page.nextCursor}`)).statusCode).toBe(200);
  });
});
