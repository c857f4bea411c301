// Every ANNEAL_ERR_* code the app can raise is in the protocol catalogue and in docs/api.md.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '@anneal/protocol';
import { AnnealError } from './errors.ts';

const srcDir = fileURLToPath(new URL('.', import.meta.url));
const apiDoc = readFileSync(
  fileURLToPath(new URL('../../../docs/api.md', import.meta.url)),
  'utf8',
);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const usedCodes = new Set(
  sourceFiles(srcDir).flatMap(
    (file) => readFileSync(file, 'utf8').match(/ANNEAL_ERR_[A-Z_]+/g) ?? [],
  ),
);

describe('error codes', () => {
  it('uses some codes (sanity check of the scan)', () => {
    expect(usedCodes.size).toBeGreaterThan(8);
  });

  it.each([...usedCodes])('%s is catalogued and documented', (code) => {
    expect(Object.keys(ERROR_CODES)).toContain(code);
    expect(apiDoc).toContain(`\`${code}\``);
  });

  it('takes status and title from the catalogue', () => {
    const error = new AnnealError('ANNEAL_ERR_RUN_NOT_FOUND', 'x');
    expect(error.statusCode).toBe(404);
    expect(error.title).toBe(ERROR_CODES.ANNEAL_ERR_RUN_NOT_FOUND.title);
  });
});
