// Cleanup: disposers run newest first, each at most once, a failing one skipped; `closing` names
// the one a shutdown is waiting for (what the process's backstop reports when it fires).
import { describe, expect, it } from 'vitest';
import { createLogger } from '@anneal/telemetry';
import { Cleanup } from './cleanup.ts';

const logger = createLogger({ name: 'cleanup-test', level: 'silent' });

describe('Cleanup', () => {
  it('unwinds newest first, once each, and says what it is closing meanwhile', async () => {
    const cleanup = new Cleanup();
    const order: string[] = [];
    const seen: Array<string | null> = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    cleanup.add('redis', () => void order.push('redis'));
    const engines = cleanup.add('engines', async () => {
      order.push('engines');
      await held;
    });
    cleanup.add('metrics server', () => {
      order.push('metrics server');
      throw new Error('already closed');
    });
    expect(cleanup.closing).toBeNull();
    const unwinding = cleanup.unwind(logger);
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    seen.push(cleanup.closing);
    release();
    await unwinding;
    seen.push(cleanup.closing);
    expect(order).toEqual(['metrics server', 'engines', 'redis']);
    expect(seen).toEqual(['engines', null]);
    await engines(); // already run: not again
    expect(order).toHaveLength(3);
  });
});
