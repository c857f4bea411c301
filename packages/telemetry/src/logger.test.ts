import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, noopLogger, type Logger } from './logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('writes JSON lines with the app name, bindings and level', () => {
    const { lines, destination } = capture();
    const log = createLogger({
      name: 'worker',
      level: 'debug',
      bindings: { pool: 'gpu' },
      destination,
    });
    log.debug({ step: 3 }, 'step committed');
    log.child({ runId: 'r1' }).info('hello');
    expect(lines[0]).toMatchObject({
      name: 'worker',
      pool: 'gpu',
      step: 3,
      msg: 'step committed',
      level: 20,
    });
    expect(lines[1]).toMatchObject({ runId: 'r1', msg: 'hello', level: 30 });
    expect(typeof lines[0]?.['time']).toBe('string');
  });

  it('drops lines below the level', () => {
    const { lines, destination } = capture();
    createLogger({ name: 'cp', level: 'warn', destination }).info('quiet');
    expect(lines).toEqual([]);
  });

  it('redacts bearer tokens and authorization headers', () => {
    const { lines, destination } = capture();
    const log = createLogger({ name: 'cp', destination, redact: ['secret'] });
    log.info(
      { token: 'abc', req: { headers: { authorization: 'Bearer abc' } }, secret: 's' },
      'req',
    );
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain('abc');
    expect(text).not.toContain('"s"');
    expect(text).toContain('[redacted]');
  });

  it('rejects an unknown level, naming it', () => {
    expect(() => createLogger({ name: 'cp', level: 'verbose' })).toThrow(/log level "verbose"/);
  });

  it('returns something packages can take as a Logger', () => {
    const { destination } = capture();
    const asInterface: Logger = createLogger({ name: 'cp', destination });
    expect(typeof asInterface.child({}).warn).toBe('function');
    expect(noopLogger.child({ a: 1 })).toBe(noopLogger);
  });
});
