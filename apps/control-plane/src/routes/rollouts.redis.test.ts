// GET /v1/runs/{id}/rollouts[/{rolloutId}] on a real rollout ledger: steps written and committed
// with @anneal/store's ledger writer under the plane's artifact root, step records in a real
// Redis. Only steps both hold are listed (a step the ledger has but Redis does not — rolled back —
// is not), pruned groups are gone; sort, filters and keyset paging agree with the same records
// sorted and filtered here; tenant scope and bad parameters named.
import { Value } from '@sinclair/typebox/value';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import {
  RolloutPage,
  RolloutRecord,
  type ListedRollout,
  withDeprecatedRolloutNames,
} from '@anneal/protocol';
import {
  INDEX_FILE,
  GZIP_REST_FILE,
  GZIP_SAMPLE_FILE,
  pruneLedgerStep,
  runArtifactDir,
  startRun,
  stepDir,
} from '@anneal/store';
import { TOKENS, type TestPlane, auth, submit, testPlane } from '../../test/helpers.ts';
import { commitStep as commitLedger, groupsOf, record } from '../../test/ledger-fixture.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

const get = (url: string, token: string = TOKENS.acmeViewer) =>
  plane.app.inject({ method: 'GET', url, headers: auth(token) });

async function grpoRun(token: string = TOKENS.acmeSubmitter): Promise<string> {
  const res = await submit(plane.app, 'kind: grpo\n', { token });
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json().id as string;
  await startRun(plane.store, id, 'w1');
  return id;
}

const commitStep = (id: string, step: number, options: { inRedis?: boolean } = {}) =>
  commitLedger(plane.store, plane.artifactDir, id, step, options);

/** As the API lists a record: no tokens, the old names beside the new until 2027-06-30. */
const listedOf = ({ tokens: _t, ...rest }: RolloutRecord): ListedRollout =>
  withDeprecatedRolloutNames(rest);

async function all(url: string, from: string | null = null): Promise<ListedRollout[]> {
  const out: ListedRollout[] = [];
  let cursor = from;
  do {
    const sep = url.includes('?') ? '&' : '?';
    const res = await get(cursor ? `${url}${sep}cursor=${cursor}` : url);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json<RolloutPage>();
    expect(
      Value.Check(RolloutPage, page),
      JSON.stringify([...Value.Errors(RolloutPage, page)][0]),
    ).toBe(true);
    out.push(...page.rollouts);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** Runs with steps 1 and 2 committed (step 1 pruned to its sample, group 0) and step 3 in the
 * ledger only. */
async function ledgerRun(): Promise<{ id: string; visible: RolloutRecord[] }> {
  const id = await grpoRun();
  await commitStep(id, 1);
  await commitStep(id, 2);
  await commitStep(id, 3, { inRedis: false });
  expect(await pruneLedgerStep(runArtifactDir(plane.artifactDir, id), 1)).toBe(true);
  const visible = [...groupsOf(1)[0]!, ...groupsOf(2).flat()];
  return { id, visible };
}

const ids = (rs: readonly { id: string }[]) => rs.map((r) => r.id);
const natural = (a: RolloutRecord, b: RolloutRecord) =>
  a.step - b.step ||
  a.group - b.group ||
  (a.role === b.role ? 0 : a.role === 'policy' ? -1 : 1) ||
  a.index - b.index;

describe('GET /v1/runs/{id}/rollouts', () => {
  it('lists the committed, kept rollouts in step order without tokens; one rollout in full', async () => {
    const { id, visible } = await ledgerRun();
    const listed = await all(`/v1/runs/${id}/rollouts?limit=4`);
    expect(listed).toEqual([...visible].sort(natural).map(listedOf));
    expect(listed.some((r) => 'tokens' in r)).toBe(false);

    const one = await get(`/v1/runs/${id}/rollouts/2-1-r0`);
    expect(one.statusCode, one.body).toBe(200);
    expect(Value.Check(RolloutRecord, one.json())).toBe(true);
    expect(one.json()).toEqual(withDeprecatedRolloutNames(record(2, 1, 0, 'reference')));
    // pruned (step 1 keeps group 0), not committed in Redis (step 3), never written (step 9)
    for (const missing of ['1-1-0', '3-0-0', '9-0-0']) {
      const res = await get(`/v1/runs/${id}/rollouts/${missing}`);
      expect(res.statusCode, missing).toBe(404);
      expect(res.json().code).toBe('ANNEAL_ERR_NOT_FOUND');
    }
  });

  it('serves a step an older worker wrote (old names) under the new names, the old ones beside', async () => {
    const id = await grpoRun();
    await commitStep(id, 2);
    // Rewrite step 2 as a worker before the rename wrote it: index version 1 (`tokens`,
    // `generation`), records with rewards.base/preference, prompt.tokens, ratio.tokens.
    const dir = stepDir(runArtifactDir(plane.artifactDir, id), 2);
    const index = JSON.parse(await readFile(path.join(dir, INDEX_FILE), 'utf8'));
    const { hasTokens, rollbacks, ...rest } = index;
    const oldRecord = (r: RolloutRecord) => {
      const { prompt: promptLength, ...lengths } = r.lengths;
      const { baseReward, preferenceScore, ...rewards } = r.rewards ?? {};
      const { generated, ...ratio } = r.ratio ?? {};
      return {
        ...r,
        prompt: { text: r.prompt.text, tokens: promptLength },
        lengths,
        rewards: r.rewards && { base: baseReward, preference: preferenceScore, ...rewards },
        ratio: r.ratio && { ...ratio, tokens: generated },
      };
    };
    let offset = 0;
    const members = groupsOf(2).map((records) =>
      gzipSync(records.map((r) => JSON.stringify(oldRecord(r))).join('\n') + '\n'),
    );
    const extents = members.map((m, group) => {
      const extent = { group, file: GZIP_SAMPLE_FILE, offset, length: m.length };
      offset += m.length;
      return extent;
    });
    // a version-1 step was written with gzip, under the `.gz` names
    await writeFile(path.join(dir, GZIP_SAMPLE_FILE), Buffer.concat(members));
    await writeFile(path.join(dir, GZIP_REST_FILE), Buffer.alloc(0));
    const oldIndex = { ...rest, version: 1, tokens: hasTokens, generation: rollbacks, extents };
    await writeFile(path.join(dir, INDEX_FILE), JSON.stringify(oldIndex));

    const listed = await all(`/v1/runs/${id}/rollouts?step=2`);
    expect(listed).toEqual(groupsOf(2).flat().sort(natural).map(listedOf));
    const policy = listed.find((r) => r.id === '2-0-1')!;
    const expected = record(2, 0, 1, 'policy');
    expect(policy.rewards).toMatchObject({
      baseReward: expected.rewards!.baseReward,
      preferenceScore: expected.rewards!.preferenceScore,
      base: expected.rewards!.baseReward,
      preference: expected.rewards!.preferenceScore,
    });
    expect(policy.lengths.prompt).toBe(expected.lengths.prompt);
    expect(policy.prompt.tokens).toBe(expected.lengths.prompt);
    expect(policy.ratio).toMatchObject({ generated: expected.ratio!.generated });
    const one = await get(`/v1/runs/${id}/rollouts/2-0-1`);
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json()).toEqual(withDeprecatedRolloutNames(expected));
  });

  it('sorts by reward, advantage, ratio and length in either order, nulls last, across pages', async () => {
    const { id, visible } = await ledgerRun();
    const keys = {
      reward: (r: RolloutRecord) => r.rewards?.reward ?? null,
      advantage: (r: RolloutRecord) => r.advantage,
      ratio: (r: RolloutRecord) => r.ratio?.mean ?? null,
      length: (r: RolloutRecord) => r.lengths.generated,
    };
    for (const [sort, key] of Object.entries(keys)) {
      for (const order of ['asc', 'desc'] as const) {
        const got = await all(`/v1/runs/${id}/rollouts?sort=${sort}&order=${order}&limit=5`);
        expect(new Set(ids(got)).size, `${sort} ${order}`).toBe(visible.length);
        const values = got.map((r) => key(r as RolloutRecord));
        const present = values.filter((v): v is number => v !== null);
        const sorted = [...present].sort((a, b) => (order === 'asc' ? a - b : b - a));
        expect(present, `${sort} ${order}`).toEqual(sorted);
        expect(values.slice(present.length).every((v) => v === null)).toBe(true);
      }
    }
  });

  it('filters by step, role, prompt across steps, finish, reward range, tool calls and errors, text', async () => {
    const { id, visible } = await ledgerRun();
    const base = `/v1/runs/${id}/rollouts`;
    const expectIds = async (query: string, keep: (r: RolloutRecord) => boolean) => {
      const want = visible.filter(keep).sort(natural);
      expect(want.length, `${query} selects something`).toBeGreaterThan(0);
      expect(ids(await all(`${base}?${query}&limit=3`)), query).toEqual(ids(want));
    };
    await expectIds('step=2&role=reference', (r) => r.step === 2 && r.role === 'reference');
    await expectIds('prompt=p-river', (r) => r.promptId === 'p-river');
    expect(new Set(visible.filter((r) => r.promptId === 'p-river').map((r) => r.step)).size).toBe(
      2,
    );
    await expectIds('finish=no_answer', (r) => r.finish === 'no_answer');
    await expectIds(
      'minReward=0&maxReward=0.25',
      (r) => r.rewards !== null && r.rewards.reward >= 0 && r.rewards.reward <= 0.25,
    );
    await expectIds('hasToolCalls=false', (r) => r.toolCalls === 0);
    await expectIds('hasToolErrors=true', (r) => r.toolErrors > 0);
    await expectIds('grep=RESULT%20ABOUT%20p-river', (r) =>
      r.turns.some((t) => t.calls.some((c) => c.result.includes('result about p-river'))),
    );
  });

  it('follows one prompt in two runs', async () => {
    const a = await ledgerRun();
    const b = await grpoRun();
    await commitStep(b, 1);
    const inB = groupsOf(1)
      .flat()
      .filter((r) => r.promptId === 'p-river' && r.role === 'policy');
    expect(ids(await all(`/v1/runs/${b}/rollouts?prompt=p-river&role=policy`))).toEqual(ids(inB));
    const inA = a.visible.filter((r) => r.promptId === 'p-river' && r.role === 'policy');
    expect(ids(await all(`/v1/runs/${a.id}/rollouts?prompt=p-river&role=policy`))).toEqual(
      ids(inA.sort(natural)),
    );
  });

  it('keeps a cursor stable while steps are committed', async () => {
    const { id } = await ledgerRun();
    const url = `/v1/runs/${id}/rollouts?sort=reward&order=desc&limit=4`;
    const first = (await get(url)).json<RolloutPage>();
    await commitStep(id, 4);
    const rest = await all(url, first.nextCursor);
    const seen = ids([...first.rollouts, ...rest]);
    expect(new Set(seen).size).toBe(seen.length);
    const last = first.rollouts.at(-1)!.rewards!.reward;
    // step 4 shows up after the cursor exactly where it sorts after it (on a reward tie, a later
    // step comes first in descending order: before the cursor)
    for (const r of groupsOf(4).flat()) {
      const after = r.rewards === null || r.rewards.reward < last;
      expect(seen.includes(r.id), r.id).toBe(after);
    }
  });

  it("answers 404 for another tenant's run and for runs of other kinds; names bad parameters", async () => {
    const { id } = await ledgerRun();
    for (const url of [`/v1/runs/${id}/rollouts`, `/v1/runs/${id}/rollouts/2-0-0`]) {
      const res = await get(url, TOKENS.betaSubmitter);
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('ANNEAL_ERR_RUN_NOT_FOUND');
    }
    const sft = (await submit(plane.app, 'kind: sft\n')).json().id as string;
    expect((await get(`/v1/runs/${sft}/rollouts`)).json().code).toBe('ANNEAL_ERR_NOT_FOUND');
    const cases: Array<[string, string]> = [
      ['rollouts?sort=loss', '/query/sort'],
      ['rollouts?role=critic', '/query/role'],
      ['rollouts?minReward=high', '/query/minReward'],
      ['rollouts?limit=201', '/query/limit'],
      ['rollouts?cursor=%7B%7D', '/query/cursor'],
      ['rollouts/2-0', '/params/rolloutId'],
    ];
    for (const [path, pointer] of cases) {
      const res = await get(`/v1/runs/${id}/${path}`);
      expect(res.statusCode, path).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(
        res.json().errors.map((e: { path: string }) => e.path),
        path,
      ).toContain(pointer);
    }
  });
});
