// docs/reliability.md's figures table is generated from the rows the reliability tests write
// (scripts/reliability-report.mjs). This checks the committed table against the row schema —
// header and cell count — and the schema checks themselves; never the timing values.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  BEGIN,
  COLUMNS,
  DOC,
  END,
  checkRow,
  renderTable,
  tableHeader,
} from '../../../scripts/reliability-report.mjs';

const row = {
  scenario: 'worker kill -9 (sft)',
  variant: 'heartbeat',
  lost: 0,
  duplicated: 0,
  detectMs: 2071.4,
  recoverMs: null,
  detail: 'a | b',
  measuredAt: '2026-12-01T09:00:00.000Z',
};

describe('docs/reliability.md', () => {
  it('its figures table has the columns of the result rows, and each line every cell', async () => {
    const doc = await readFile(DOC, 'utf8');
    expect(tableHeader(doc)).toEqual(COLUMNS.map((c) => c.header));
    const body = doc.slice(doc.indexOf(BEGIN), doc.indexOf(END)).split('\n');
    const lines = body.filter((l) => l.startsWith('|')).slice(2);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      // Escaped pipes inside a cell are not separators.
      expect(line.split(/(?<!\\)\|/).slice(1, -1)).toHaveLength(COLUMNS.length);
    }
  });

  it('a row missing a field or with a negative count is refused, naming the field', () => {
    expect(checkRow(row)).toBe(row);
    expect(() => checkRow({ ...row, lost: -1 }, 'x.json')).toThrow(/x\.json: field 'lost'/);
    expect(() => checkRow({ ...row, detectMs: '2s' })).toThrow(/'detectMs'/);
    const { variant: _omitted, ...noVariant } = row;
    expect(() => checkRow(noVariant)).toThrow(/'variant'/);
  });

  it('renders rows sorted, milliseconds rounded, pipes escaped', () => {
    const table = renderTable([{ ...row, scenario: 'z' }, row]).split('\n');
    expect(table[0]).toBe(`| ${COLUMNS.map((c) => c.header).join(' | ')} |`);
    expect(table[2]).toContain('| worker kill -9 (sft) | heartbeat | 0 | 0 | 2071 | – | a \\| b |');
    expect(table[3]).toMatch(/^\| z \|/);
  });
});
