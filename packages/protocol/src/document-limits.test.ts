// Hostile documents get one clear issue, never an exception or a parse that runs for seconds:
// each case here either threw, answered with a stack overflow, or took minutes before the bounds.
import { describe, expect, it } from 'vitest';
import { parseSourceText } from './document.ts';
import { DOCUMENT_LIMITS, scanText } from './document-limits.ts';
import { parseOperatorConfig } from './operator-config-parse.ts';
import { parseRunSpec } from './run-spec/index.ts';

const manyLabelsYaml = (n: number) =>
  'kind: sft\nlabels:\n' + Array.from({ length: n }, (_, i) => `  k${i}: v`).join('\n');
const manyLabelsJson = (n: number) =>
  JSON.stringify({
    kind: 'sft',
    labels: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v'])),
  });

function firstError(text: string) {
  const parsed = parseRunSpec(text);
  expect(parsed.ok).toBe(false);
  return parsed.ok ? undefined : parsed.errors[0];
}

describe('document limits', () => {
  it('refuses a YAML mapping with more entries than the limit before parsing it', () => {
    const text = manyLabelsYaml(4 * DOCUMENT_LIMITS.maxEntries + 10);
    expect(scanText(text)?.message).toBe('document has more than 10000 entries');
    expect(firstError(text)).toEqual({ path: '', message: 'document has more than 10000 entries' });
  });

  it('counts parsed entries exactly when the text scan lets a document through', () => {
    const text = manyLabelsYaml(DOCUMENT_LIMITS.maxEntries + 1);
    expect(scanText(text)).toBeUndefined();
    expect(firstError(text)?.message).toBe('document has more than 10000 entries');
  });

  it('refuses a JSON spec with too many keys without re-parsing it as YAML', () => {
    expect(firstError(manyLabelsJson(DOCUMENT_LIMITS.maxEntries + 1))?.message).toBe(
      'document has more than 10000 entries',
    );
  });

  it('refuses JSON nested 10,000 levels deep (a stack overflow in validation before)', () => {
    const deep = '{"kind":"sft","labels":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}';
    expect(firstError(deep)?.message).toBe('document nests deeper than 64 levels');
  });

  it('refuses deep block nesting found only by the tree walk', () => {
    const lines = Array.from({ length: 70 }, (_, i) => `${' '.repeat(i)}a${i}:`);
    const error = parseSourceText(lines.join('\n') + ' x');
    expect(error.ok).toBe(false);
    if (!error.ok) expect(error.errors[0]?.message).toBe('document nests deeper than 64 levels');
  });

  it('refuses a billion-laughs document with an issue instead of a thrown error', () => {
    const rows = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 12; i++)
      rows.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(', ')}]`,
      );
    const parsed = parseSourceText(rows.join('\n'));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors[0]?.message).toBe('document has more than 100 aliases');
  });

  it('names an alias without an anchor instead of throwing ReferenceError', () => {
    const parsed = parseOperatorConfig('pools: *nowhere\n');
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors.map((e) => e.message).join()).toMatch(/nowhere/);
  });

  it('reports duplicate keys with their path and line', () => {
    const parsed = parseSourceText('kind: sft\nlabels:\n  a: x\n  a: y\n');
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.errors).toEqual([{ path: '/labels/a', message: "duplicate key 'a'", line: 4 }]);
    }
  });

  it('refuses collection and alias keys (converting them printed a process warning)', () => {
    expect(firstError('? [a, b]\n: c\nkind: sft\n')).toMatchObject({
      message: 'a key must be a plain scalar, not a collection or alias',
      line: 1,
    });
    expect(firstError('kind: sft\nlabels: { ? { x: 1 } : y }\n')).toMatchObject({
      path: expect.stringMatching(/^\/labels\//),
    });
    expect(firstError('a: &k [x]\n*k : 1\nkind: sft\n')).toMatchObject({ line: 2 });
  });

  it('refuses __proto__ keys in JSON and YAML rather than dropping their fields', () => {
    expect(firstError('{"kind":"sft","__proto__":{"labels":{"x":"y"}}}')).toEqual({
      path: '/__proto__',
      message: "key '__proto__' is not allowed",
    });
    expect(firstError('kind: sft\n__proto__: {a: 1}\n')).toMatchObject({
      path: '/__proto__',
      message: "key '__proto__' is not allowed",
      line: 2,
    });
  });

  it('leaves ordinary documents alone (brackets and colons inside strings included)', () => {
    const parsed = parseRunSpec(
      'kind: sft\nlabels: {team: "a: [b, {c"}\nname: "x - y: z"\n'.replace(
        'name: "x - y: z"\n',
        '',
      ),
    );
    expect(parsed.ok).toBe(true);
    expect(parseRunSpec(manyLabelsJson(20)).ok).toBe(true);
  });
});
