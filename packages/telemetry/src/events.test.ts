import { describe, expect, it, vi } from 'vitest';
import { logEvents } from './event-log.ts';
import { createEventBus } from './events.ts';
import type { Logger } from './logger.ts';

describe('createEventBus', () => {
  it('delivers typed payloads to named then catch-all listeners, and unsubscribes', () => {
    const bus = createEventBus();
    const seen: string[] = [];
    const off = bus.on('worker:slots', (p) => seen.push(`slots ${p.busy}/${p.total}`));
    bus.onAny((name) => seen.push(`any ${name}`));
    bus.emit('worker:slots', { busy: 1, total: 2 });
    off();
    bus.emit('worker:slots', { busy: 2, total: 2 });
    expect(seen).toEqual(['slots 1/2', 'any worker:slots', 'any worker:slots']);
  });

  it('rethrows a listener error by default', () => {
    const bus = createEventBus();
    bus.on('worker:heartbeat', () => {
      throw new Error('boom');
    });
    expect(() => bus.emit('worker:heartbeat', { atMs: 1 })).toThrow('boom');
  });

  it('with onListenerError, reports the error and still runs the other listeners', () => {
    const errors: string[] = [];
    const bus = createEventBus({
      onListenerError: (e, event) => errors.push(`${event}: ${String(e)}`),
    });
    const after = vi.fn();
    bus.on('worker:heartbeat', () => {
      throw new Error('boom');
    });
    bus.on('worker:heartbeat', after);
    bus.emit('worker:heartbeat', { atMs: 1 });
    expect(errors).toEqual(['worker:heartbeat: Error: boom']);
    expect(after).toHaveBeenCalledOnce();
  });
});

describe('logEvents', () => {
  function recorder() {
    const calls: [string, Record<string, unknown>, string | undefined][] = [];
    const at =
      (level: string) =>
      (obj: object | string, msg?: string): void => {
        calls.push([level, typeof obj === 'string' ? {} : (obj as Record<string, unknown>), msg]);
      };
    const logger: Logger = {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: () => logger,
    };
    return { calls, logger };
  }

  it('logs lifecycle at info, failures at warn with the message, the rest at debug', () => {
    const { calls, logger } = recorder();
    const bus = createEventBus();
    const off = logEvents(bus, logger);
    bus.emit('run:started', { runId: 'r', kind: 'grpo', pool: 'gpu', atMs: 5 });
    bus.emit('attempt:failed', { subsystem: 'trainer', willRetry: true, error: new Error('503') });
    bus.emit('worker:heartbeat', { atMs: 6 });
    off();
    bus.emit('worker:heartbeat', { atMs: 7 });
    expect(calls.map(([level, , msg]) => `${level} ${msg}`)).toEqual([
      'info run:started',
      'warn attempt:failed',
      'debug worker:heartbeat',
    ]);
    expect(calls[0]?.[1]).toMatchObject({ event: 'run:started', runId: 'r' });
    expect(calls[1]?.[1]).toMatchObject({ subsystem: 'trainer', willRetry: true, error: '503' });
  });
});
