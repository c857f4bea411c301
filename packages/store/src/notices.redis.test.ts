// run:notice events: appended to an existing run's event stream, in order with its other events.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { readEvents } from './events.ts';
import { appendRunNotice } from './notices.ts';
import { createRun } from './runs.ts';

let store: TestStore;
let runId: string;
beforeEach(async () => {
  store = await testStore();
  const result = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: grpo') });
  if (result.status !== 'created') throw new Error('create');
  runId = result.run.id;
});
afterEach(async () => {
  await store.cleanup();
});

describe('appendRunNotice', () => {
  it("appends a run:notice to the run's event stream", async () => {
    const at = new Date('2026-12-01T10:00:00.000Z');
    const notice = { code: 'grad_clip_not_applied', message: 'gradients are unclipped' };
    const id = await appendRunNotice(store.ctx, runId, notice, at);
    const events = await readEvents(store.ctx, runId);
    expect(events.at(-1)).toEqual({
      id,
      event: { type: 'run:notice', runId, ...notice, at: at.toISOString() },
    });
  });

  it('does nothing for a run that does not exist, and refuses a malformed code', async () => {
    const notice = { code: 'x', message: 'm' };
    expect(await appendRunNotice(store.ctx, 'run_missing', notice)).toBeNull();
    expect(await readEvents(store.ctx, 'run_missing')).toEqual([]);
    await expect(
      appendRunNotice(store.ctx, runId, { code: 'Bad Code', message: 'm' }),
    ).rejects.toThrow("code 'Bad Code' must match");
  });
});
