// Every error code and every run-spec field is documented in docs/api.md.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from './errors.ts';
import { renderSpecReferenceMarkdown } from './spec-reference.ts';

const apiDoc = readFileSync(
  fileURLToPath(new URL('../../../docs/api.md', import.meta.url)),
  'utf8',
);

/** Markdown tables modulo the column padding prettier adds. */
function normalizeTables(markdown: string): string {
  return markdown
    .split('\n')
    .map((line) =>
      line.startsWith('|')
        ? line
            .split('|')
            .map((cell) => cell.trim())
            .map((cell) => (/^:?-+:?$/.test(cell) ? '-' : cell))
            .join('|')
        : line.trim(),
    )
    .join('\n');
}

describe('docs/api.md', () => {
  it.each(Object.entries(ERROR_CODES))('documents %s with its status', (code, { status }) => {
    expect(normalizeTables(apiDoc)).toContain(`|\`${code}\`|${status}|`);
  });

  it('contains the run spec reference generated from the schemas (regenerate with scripts/print-spec-reference.ts)', () => {
    expect(normalizeTables(apiDoc)).toContain(normalizeTables(renderSpecReferenceMarkdown()));
  });
});
