// The run's event stream read as stored (readEventsJson, what an SSE replay sends on): the same
// events, ids and types as the parsed reader, whichever writer wrote them — TypeScript writers put
// `type` first, the Lua transition script's cjson orders keys freely.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { setCheckpoint } from './checkpoints.ts';
import { keys } from './context.ts';
import { readEvents, readEventsJson } from './events.ts';
import { appendRunNotice } from './notices.ts';
import { createRun } from './runs.ts';
import { appendStep } from './steps.ts';
import { finishRun, startRun } from './transitions.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
});
afterEach(async () => {
  await store.cleanup();
});

describe('readEventsJson', () => {
  it('gives every event as stored, with the type the parsed reader sees', async () => {
    const created = await createRun(store.ctx, { tenant: 'acme', spec: testSpec('kind: sft') });
    if (created.status !== 'created') throw new Error('create');
    const id = created.run.id;
    await startRun(store.ctx, id, 'w1');
    await appendStep(store.ctx, id, 1, { loss: 1 });
    await setCheckpoint(store.ctx, id, { step: 1, path: '/c1' });
    await appendRunNotice(store.ctx, id, { code: 'test', message: 'a notice' });
    await finishRun(store.ctx, id, { state: 'succeeded', reason: 'done' }, 'w1');
    // An event whose JSON does not start with its type (as cjson may write it).
    await store.ctx.redis.xadd(
      keys(store.ctx.prefix).events(id),
      '*',
      'event',
      JSON.stringify({
        runId: id,
        type: 'run:notice',
        code: 'late',
        message: 'm',
        at: new Date().toISOString(),
      }),
    );
    const parsed = await readEvents(store.ctx, id);
    const stored = await readEventsJson(store.ctx, id);
    expect(stored.map((e) => e.id)).toEqual(parsed.map((e) => e.id));
    expect(stored.map((e) => e.type)).toEqual(parsed.map((e) => e.event.type));
    expect(stored.map((e) => JSON.parse(e.json) as unknown)).toEqual(parsed.map((e) => e.event));
    expect(new Set(stored.map((e) => e.type))).toEqual(
      new Set(['run:state', 'step:committed', 'checkpoint:saved', 'run:notice']),
    );
    // Paging as readEvents pages.
    const second = await readEventsJson(store.ctx, id, stored[1]!.id, 2);
    expect(second.map((e) => e.id)).toEqual(stored.slice(2, 4).map((e) => e.id));
  });
});
