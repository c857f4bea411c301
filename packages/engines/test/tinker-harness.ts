// Starts a fake Tinker server and a connected client with fake timers and a manual scheduler.
import type { TinkerEndpointConfig } from '../src/tinker/config.ts';
import { TinkerTrainerEngine } from '../src/tinker/engine.ts';
import type { TinkerEvent } from '../src/tinker/transport.ts';
import { FakeTinkerServer } from './tinker/fake-server.ts';
import type { FakeTinkerOptions } from './tinker/fake-server.ts';
import type { AdamParams, TrainerCapabilities } from '../src/types.ts';
import { fakeTimers, manualScheduler } from './fake-timers.ts';
import type { FakeTimers } from './fake-timers.ts';

export const TINKER_CAPS: TrainerCapabilities = {
  kinds: ['sft', 'grpo', 'eval'],
  losses: ['cross_entropy', 'importance_sampling', 'ppo'],
  reduction: 'sum',
};

export const adam: AdamParams = {
  learningRate: 1e-4,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-12,
  weightDecay: 0,
  gradClipNorm: 0,
};

export interface TinkerSetup {
  fake: FakeTinkerServer;
  engine: TinkerTrainerEngine;
  time: FakeTimers;
  events: TinkerEvent[];
  scheduler: ReturnType<typeof manualScheduler>;
}

/** Everything started is pushed onto `open` for the test's afterEach to close. */
export async function startTinker(
  open: Array<{ close(): Promise<void> }>,
  server: FakeTinkerOptions = {},
  config: Partial<TinkerEndpointConfig> = {},
): Promise<TinkerSetup> {
  // Timeouts expire as the fake clock moves; a fake server given `holdMs` moves it while it
  // holds a pending retrieve_future (SkyRL's 300 s hold), so per-call timeouts are exercised.
  const time = fakeTimers({ expireTimeouts: true });
  const fake = await FakeTinkerServer.start(
    server.holdMs === undefined ? server : { ...server, clock: time },
  );
  open.push(fake);
  const events: TinkerEvent[] = [];
  const scheduler = manualScheduler();
  const engine = await TinkerTrainerEngine.connect(
    {
      name: 'tinker-test',
      baseUrl: fake.url,
      capabilities: TINKER_CAPS,
      retry: { attempts: 3, baseDelayMs: 100, maxDelayMs: 1000 },
      ...config,
    },
    { timers: time.timers, scheduler, onEvent: (e) => events.push(e) },
  );
  open.push(engine);
  return { fake, engine, time, events, scheduler };
}
