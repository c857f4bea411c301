import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOKENS, type TestPlane, auth, eventually, submit, testPlane } from '../../test/helpers.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

describe('POST /v1/runs', () => {
  it('creates a queued run from YAML with defaults resolved, and enqueues its job', async () => {
    const res = await submit(plane.app, 'kind: grpo\npriority: 70\nlabels: {team: search}\n');
    expect(res.statusCode).toBe(201);
    const run = res.json();
    expect(res.headers.location).toBe(`/v1/runs/${run.id}`);
    expect(run).toMatchObject({
      tenant: 'acme',
      kind: 'grpo',
      state: 'queued',
      pool: 'default',
      priority: 70,
    });
    expect(run.spec.endpoints).toEqual({
      inference: 'embedded',
      trainer: 'embedded',
      search: 'local',
    });
    expect(run.spec.model).toEqual({ base: 'tiny' });
    expect(run.spec.tools.maxCallsPerRollout).toBe(5);
    const job = await eventually(() =>
      plane.redis.hget(`${plane.prefix}:bull:pool-default:${run.id}`, 'data'),
    );
    expect(JSON.parse(job ?? '')).toEqual({ runId: run.id });
    await eventually(async () => (await plane.redis.zcard(`${plane.prefix}:outbox`)) === 0);
  });

  it('refuses a spec beyond the document limits with one issue, before parsing it', async () => {
    // ~1 MiB of YAML with 110,000 label keys: the parser used to run for minutes on it.
    const labels = Array.from({ length: 110_000 }, (_, i) => `  k${i}: v`).join('\n');
    const res = await submit(plane.app, `kind: sft\nlabels:\n${labels}\n`.slice(0, 1_048_000));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'ANNEAL_ERR_RUN_SPEC_INVALID',
      errors: [{ path: '', message: 'document has more than 10000 entries' }],
    });
    const json = await submit(
      plane.app,
      `{"kind":"sft","labels":${'['.repeat(5000)}${']'.repeat(5000)}}`,
    );
    expect(json.statusCode).toBe(400);
    expect(json.json().errors).toEqual([
      { path: '', message: 'document nests deeper than 64 levels' },
    ]);
  });

  it('accepts JSON too', async () => {
    const res = await submit(plane.app, '{"kind": "sft", "steps": 5, "pool": "gpu"}');
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ kind: 'sft', pool: 'gpu', spec: { steps: 5 } });
  });

  it('rejects unknown fields as problem+json with JSON pointers and lines', async () => {
    const res = await submit(plane.app, 'kind: grpo\nrollout:\n  groupSize: 1\n  grupSize: 4\n');
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json();
    expect(body).toMatchObject({
      code: 'ANNEAL_ERR_RUN_SPEC_INVALID',
      status: 400,
      instance: '/v1/runs',
    });
    expect(body.type).toBe('urn:anneal:error:ANNEAL_ERR_RUN_SPEC_INVALID');
    expect(body.errors).toEqual([
      {
        path: '/rollout/groupSize',
        message: 'expected integer to be greater or equal to 2',
        line: 3,
      },
      { path: '/rollout/grupSize', message: "unknown field 'grupSize'", line: 4 },
    ]);
  });

  it('names the field of an unknown resource and explains capability errors', async () => {
    const unknown = await submit(
      plane.app,
      'kind: grpo\npool: tpu\nendpoints: {inference: vllm-x}\n',
    );
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().code).toBe('ANNEAL_ERR_UNKNOWN_RESOURCE');
    expect(unknown.json().errors.map((e: { path: string }) => e.path)).toEqual([
      '/pool',
      '/endpoints/inference',
    ]);
    expect(unknown.json().errors[0].message).toBe("unknown pool 'tpu' (declared: default, gpu)");

    const capability = await submit(plane.app, 'kind: grpo\nendpoints: {trainer: sftonly}\n');
    expect(capability.statusCode).toBe(400);
    expect(capability.json().code).toBe('ANNEAL_ERR_TRAINER_CAPABILITY');
    expect(capability.json().detail).toMatch(
      /trainer endpoint 'sftonly' cannot run kind 'grpo': .*grpo needs importance_sampling/,
    );

    const dataset = await submit(
      plane.app,
      'kind: grpo\ndata: {mix: [{source: search-qa, weight: 1}, {source: triviaqa, weight: 1}]}\n',
    );
    expect(dataset.statusCode).toBe(400);
    expect(dataset.json()).toMatchObject({
      code: 'ANNEAL_ERR_UNKNOWN_RESOURCE',
      errors: [
        {
          path: '/data/mix/1/source',
          message:
            "unknown grpo dataset 'triviaqa' (built-in or registered: search-qa, rubric-chat)",
        },
      ],
    });

    // An eval graded by an LLM judge needs a judge endpoint (docs/evaluation.md "Grading").
    const judge = await submit(plane.app, 'kind: eval\nmodels: [{}]\njudge: llm\n');
    expect(judge.statusCode).toBe(400);
    expect(judge.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(judge.json()).toMatchObject({
      code: 'ANNEAL_ERR_UNKNOWN_RESOURCE',
      errors: [{ path: '/judge', message: expect.stringMatching(/^judge: llm grades answers/) }],
    });

    const checkpoint = await submit(
      plane.app,
      'kind: grpo\nmodel: {checkpoint: {run: run_01HZZZZZZZZZZZZZZZZZZZZZZZ}}\n',
    );
    expect(checkpoint.json()).toMatchObject({
      code: 'ANNEAL_ERR_UNKNOWN_RESOURCE',
      errors: [{ path: '/model/checkpoint/run' }],
    });
  });

  it('accepts a checkpoint of an earlier run of the same tenant only', async () => {
    const sft = (await submit(plane.app, 'kind: sft')).json();
    const spec = `kind: grpo\nmodel: {checkpoint: {run: ${sft.id}}}\n`;
    expect((await submit(plane.app, spec)).json().errors[0].message).toMatch(
      /has no checkpoint yet/,
    );
    await plane.redis.hset(
      `${plane.prefix}:run:${sft.id}`,
      'checkpointStep',
      '10',
      'checkpointPath',
      '/ck/10',
    );
    expect((await submit(plane.app, spec)).statusCode).toBe(201);
    const other = await submit(plane.app, spec, { token: TOKENS.betaSubmitter });
    expect(other.json().errors[0].message).toBe(`no run '${sft.id}' in this tenant`);
  });

  it('checks every eval checkpoint at submission: missing, without checkpoint, other tenant', async () => {
    const done = (await submit(plane.app, 'kind: sft')).json();
    await plane.redis.hset(
      `${plane.prefix}:run:${done.id}`,
      'checkpointStep',
      '1',
      'checkpointPath',
      '/ck/1',
    );
    const fresh = (await submit(plane.app, 'kind: sft')).json();
    const spec = (...runs: string[]) =>
      `kind: eval\nmodels:\n${runs.map((r) => `  - {checkpoint: {run: ${r}}}`).join('\n')}\n`;
    const bad = await submit(plane.app, spec(done.id, fresh.id, 'run_01HZZZZZZZZZZZZZZZZZZZZZZZ'));
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({
      code: 'ANNEAL_ERR_UNKNOWN_RESOURCE',
      errors: [
        { path: '/models/1/checkpoint/run', message: expect.stringMatching(/no checkpoint yet/) },
        { path: '/models/2/checkpoint/run', message: expect.stringMatching(/no run/) },
      ],
    });
    const other = await submit(plane.app, spec(done.id), { token: TOKENS.betaSubmitter });
    expect(other.json().errors).toEqual([
      { path: '/models/0/checkpoint/run', message: `no run '${done.id}' in this tenant` },
    ]);
    expect((await submit(plane.app, spec(done.id))).statusCode).toBe(201);
  });

  it('honours Idempotency-Key: 201 then 200 with the same run; another body is 409', async () => {
    const first = await submit(plane.app, 'kind: sft\nsteps: 3', { idempotencyKey: 'abc-1' });
    const replay = await submit(plane.app, '{"steps": 3, "kind": "sft"}', {
      idempotencyKey: 'abc-1',
    });
    const conflict = await submit(plane.app, 'kind: sft\nsteps: 4', { idempotencyKey: 'abc-1' });
    expect(first.statusCode).toBe(201);
    expect(replay.statusCode).toBe(200);
    expect(replay.json().id).toBe(first.json().id);
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().code).toBe('ANNEAL_ERR_IDEMPOTENCY_CONFLICT');
    const bad = await submit(plane.app, 'kind: sft', { idempotencyKey: 'has space' });
    expect(bad.json()).toMatchObject({
      code: 'ANNEAL_ERR_VALIDATION',
      errors: [{ path: '/headers/idempotency-key' }],
    });
  });

  it('enforces roles, body size and media types', async () => {
    const viewer = await submit(plane.app, 'kind: sft', { token: TOKENS.acmeViewer });
    expect(viewer.statusCode).toBe(403);
    expect(viewer.json().code).toBe('ANNEAL_ERR_FORBIDDEN');
    const anonymous = await plane.app.inject({
      method: 'POST',
      url: '/v1/runs',
      payload: 'kind: sft',
    });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/Bearer/);
    const wrongToken = await plane.app.inject({
      method: 'GET',
      url: '/v1/runs',
      headers: auth('nope-nope-nope-nope'),
    });
    expect(wrongToken.json().code).toBe('ANNEAL_ERR_UNAUTHENTICATED');
    const huge = await submit(plane.app, `kind: sft\nname: "${'x'.repeat(1_100_000)}"`);
    expect(huge.statusCode).toBe(413);
    expect(huge.json().code).toBe('ANNEAL_ERR_PAYLOAD_TOO_LARGE');
    const xml = await submit(plane.app, '<run/>', { contentType: 'application/xml' });
    expect(xml.statusCode).toBe(415);
    expect(xml.json().code).toBe('ANNEAL_ERR_UNSUPPORTED_MEDIA_TYPE');
    const empty = await submit(plane.app, ' ', { contentType: 'application/yaml' });
    expect(empty.json().code).toBe('ANNEAL_ERR_RUN_SPEC_INVALID');
  });
});
