import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileCache } from './file-cache.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-file-cache-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('FileCache', () => {
  it('parses a file once while it is unchanged, again once it grew or was replaced', async () => {
    const cache = new FileCache(1024);
    const file = path.join(dir, 'a.jsonl');
    let parses = 0;
    const parse = (b: Buffer) => {
      parses++;
      return b.toString('utf8').split('\n').filter(Boolean);
    };
    expect(await cache.read(file, parse)).toBeUndefined();
    await writeFile(file, 'x\n');
    const first = await cache.read(file, parse);
    expect(await cache.read(file, parse)).toBe(first);
    expect(parses).toBe(1);
    await writeFile(file, 'x\ny\n');
    expect(await cache.read(file, parse)).toEqual(['x', 'y']);
    // same size, new inode (a rename over it)
    await writeFile(path.join(dir, 'b'), 'z\nw\n');
    await rename(path.join(dir, 'b'), file);
    expect(await cache.read(file, parse)).toEqual(['z', 'w']);
    expect(parses).toBe(3);
  });

  it('evicts the least recently used entries beyond its byte budget', async () => {
    const cache = new FileCache(10);
    let computed = 0;
    const value = (key: string) => cache.derived(key, 'v1', 4, async () => `${key}:${++computed}`);
    expect(await value('a')).toBe('a:1');
    expect(await value('b')).toBe('b:2');
    expect(await value('a')).toBe('a:1'); // a is now the most recently used
    expect(await value('c')).toBe('c:3'); // 12 bytes > 10: b goes
    expect(await value('a')).toBe('a:1');
    expect(await value('b')).toBe('b:4');
    // another version of the source is computed again; nulls are not kept
    expect(await cache.derived('a', 'v2', 4, async () => 'a2')).toBe('a2');
    let nulls = 0;
    await cache.derived('n', 'v1', 1, async () => (nulls++, null));
    await cache.derived('n', 'v1', 1, async () => (nulls++, null));
    expect(nulls).toBe(2);
  });
});
