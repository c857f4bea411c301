// GET /v1/runs/{id}/results and /results/curve.svg from an eval run's step records: the JSON in
// the OpenAPI document, tenant scope, a problem for other kinds, and an SVG that is valid XML
// with one curve and band per checkpoint and renders (rsvg-convert) to a non-empty PNG.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EVAL_CELL_KEYS as K } from '@anneal/envs';
import { appendStep, startRun } from '@anneal/store';
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

const EVAL = `kind: eval
models: [{base: tiny}, {base: tiny}]
budgets: {toolCallBudgets: [0, 1, 2]}
prices: {promptPerMillionTokens: 2, completionPerMillionTokens: 8, perToolCall: 0.005}
endpoints: {trainer: embedded}`;

/** Cell (checkpoint, b) with accuracy `acc` of 20 questions and a cost growing with b. */
async function commitCell(
  id: string,
  step: number,
  checkpoint: number,
  budget: number,
  acc: number,
) {
  await appendStep(plane.store, id, step, {
    [K.checkpoint]: checkpoint,
    [K.budget]: budget,
    [K.examples]: 20,
    [K.accuracy]: acc,
    [K.accuracyLow]: Math.max(0, acc - 0.15),
    [K.accuracyHigh]: Math.min(1, acc + 0.15),
    [K.toolCalls]: budget * 0.8,
    [K.costPerQuery]: 0.001 + budget * 0.005,
  });
}

async function evalRun(cells: Array<[number, number, number]>): Promise<string> {
  const res = await submit(plane.app, EVAL);
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json().id as string;
  await startRun(plane.store, id, 'w1');
  let step = 1;
  for (const [c, b, acc] of cells) await commitCell(id, step++, c, b, acc);
  return id;
}

describe('GET /v1/runs/{id}/results', () => {
  it('returns curves, knees and the frontier; in the OpenAPI document', async () => {
    const id = await evalRun([
      [0, 0, 0.2],
      [0, 1, 0.5],
      [0, 2, 0.505],
      [1, 0, 0.3],
      [1, 1, 0.6],
    ]);
    const res = await get(`/v1/runs/${id}/results`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      runId: id,
      state: 'running',
      budgets: [0, 1, 2],
      complete: false,
    });
    expect(body.checkpoints.map((c: { knee: number }) => c.knee)).toEqual([1, 1]);
    expect(body.checkpoints[1].cells).toHaveLength(2);
    expect(
      body.frontier.map((p: { checkpoint: number; budget: number }) => [p.checkpoint, p.budget]),
    ).toEqual([
      [1, 0],
      [1, 1],
    ]);
    const doc = (await get('/docs/json')).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/runs/{id}/results', '/v1/runs/{id}/results/curve.svg']),
    );
  });

  it('reports the prices each checkpoint was costed at: its own over the spec table, per field', async () => {
    const res = await submit(
      plane.app,
      EVAL.replace(
        'models: [{base: tiny}, {base: tiny}]',
        'models: [{base: tiny}, {base: tiny, prices: {completionPerMillionTokens: 4, perToolCall: 0}}]',
      ),
    );
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().id as string;
    await startRun(plane.store, id, 'w1');
    await commitCell(id, 1, 0, 0, 0.2);
    await commitCell(id, 2, 1, 0, 0.3);
    const body = (await get(`/v1/runs/${id}/results`)).json();
    const spec = { promptPerMillionTokens: 2, completionPerMillionTokens: 8, perToolCall: 0.005 };
    expect(body.prices).toEqual(spec);
    expect(body.checkpoints.map((c: { prices: unknown }) => c.prices)).toEqual([
      spec,
      { promptPerMillionTokens: 2, completionPerMillionTokens: 4, perToolCall: 0 },
    ]);
  });

  it("is tenant-scoped, and a problem for another kind's run", async () => {
    const id = await evalRun([]);
    const other = await get(`/v1/runs/${id}/results`, TOKENS.betaSubmitter);
    expect(other.statusCode).toBe(404);
    expect(other.json()).toMatchObject({ code: 'ANNEAL_ERR_RUN_NOT_FOUND' });
    const svgOther = await get(`/v1/runs/${id}/results/curve.svg`, TOKENS.betaSubmitter);
    expect(svgOther.statusCode).toBe(404);
    expect(svgOther.headers['content-type']).toMatch(/^application\/problem\+json/);
    const sft = (await submit(plane.app, 'kind: sft')).json().id;
    const wrongKind = await get(`/v1/runs/${sft}/results`);
    expect(wrongKind.statusCode).toBe(404);
    expect(wrongKind.json().detail).toMatch(/sft run; results exist for eval runs only/);
  });
});

describe('GET /v1/runs/{id}/results/curve.svg', () => {
  it('is valid XML with a curve and a band per checkpoint, and renders to a PNG', async () => {
    const id = await evalRun([
      [0, 0, 0.2],
      [0, 1, 0.5],
      [0, 2, 0.55],
      [1, 0, 0.3],
      [1, 1, 0.6],
      [1, 2, 0.62],
    ]);
    const res = await get(`/v1/runs/${id}/results/curve.svg`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^image\/svg\+xml/);
    const svg = res.body;
    expect(svg.match(/class="curve"/g)).toHaveLength(2);
    expect(svg.match(/class="band"/g)).toHaveLength(2);
    expect(svg.match(/class="cost-point"/g)).toHaveLength(6);
    expect(svg).toContain('class="frontier"');
    expect(svg).toContain('tool-call budget b (calls per question)');
    expect(svg).toContain('cost per query (US cents)');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-svg-'));
    try {
      const file = path.join(dir, 'curve.svg');
      await writeFile(file, svg);
      // xmllint would need libxml2-utils; rsvg-convert fails on malformed XML, so it checks both.
      await promisify(execFile)('rsvg-convert', ['-o', path.join(dir, 'curve.png'), file]);
      const png = await readFile(path.join(dir, 'curve.png'));
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect((await stat(path.join(dir, 'curve.png'))).size).toBeGreaterThan(5000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
