import { describe, expect, it } from 'vitest';
import { parseToolCallBody, parseToolCalls, searchWebToolSpec } from './toolCalls.ts';

const call = (args: unknown, name = 'search_web') =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

describe('Hermes <tool_call> parser', () => {
  it('reads a valid call with surrounding text and whitespace', () => {
    expect(parseToolCalls(`Let me look.\n${call({ query: '李雷 北京' })}\n`)).toEqual([
      { ok: true, query: '李雷 北京' },
    ]);
  });

  it('reads several calls of one turn in order', () => {
    expect(parseToolCalls(`${call({ query: 'a' })}\n${call({ query: 'b' })}`)).toEqual([
      { ok: true, query: 'a' },
      { ok: true, query: 'b' },
    ]);
  });

  it('returns nothing for a turn without calls', () => {
    expect(parseToolCalls('The answer is 42.')).toEqual([]);
  });

  it('turns malformed JSON into a failed call naming the problem', () => {
    const [bad] = parseToolCalls(
      '<tool_call>\n{"name": "search_web", "arguments": {query: x}}\n</tool_call>',
    );
    expect(bad).toMatchObject({ ok: false });
    expect(bad).toHaveProperty('detail', expect.stringMatching(/^tool call is not valid JSON: /));
  });

  it('reports a missing closing tag and a stray closing tag', () => {
    expect(parseToolCalls(`${call({ query: 'a' })}<tool_call>{"name": "search_web"`)).toEqual([
      { ok: true, query: 'a' },
      { ok: false, detail: '<tool_call> without </tool_call>' },
    ]);
    expect(parseToolCalls('oops</tool_call>')).toEqual([
      { ok: false, detail: '</tool_call> without <tool_call>' },
    ]);
  });

  it.each([
    ['[1, 2]', 'tool call must be a JSON object {"name", "arguments"}'],
    ['{"arguments": {"query": "x"}}', 'tool call has no string "name"'],
    ['{"name": "python", "arguments": {}}', 'unknown tool "python" (available: search_web)'],
    ['{"name": "search_web"}', '"arguments" must be a JSON object'],
    ['{"name": "search_web", "arguments": "not json"}', '"arguments" must be a JSON object'],
    ['{"name": "search_web", "arguments": {"q": "x"}}', 'unknown argument "q" (expected query)'],
    ['{"name": "search_web", "arguments": {"query": 3}}', 'arguments.query must be a string'],
  ])('rejects %s', (body, detail) => {
    expect(parseToolCallBody(body)).toEqual({ ok: false, detail });
  });

  it('accepts arguments written as a JSON string', () => {
    expect(
      parseToolCallBody('{"name": "search_web", "arguments": "{\\"query\\": \\"x\\"}"}'),
    ).toEqual({ ok: true, query: 'x' });
  });

  it('clips long model text echoed in an error', () => {
    const [bad] = parseToolCalls(`<tool_call>${'x'.repeat(500)}</tool_call>`);
    expect(bad?.ok === false && bad.detail.length).toBeLessThan(130);
  });
});

describe('search_web tool spec', () => {
  it('is a JSON-schema function tool carrying the limits', () => {
    const spec = searchWebToolSpec({ resultsPerCall: 3, maxQueryLength: 100 });
    expect(spec.function.name).toBe('search_web');
    expect(spec.function.description).toContain('up to 3 results');
    expect(spec.function.parameters).toMatchObject({
      type: 'object',
      required: ['query'],
      properties: { query: { type: 'string', description: expect.stringContaining('100') } },
    });
  });
});
