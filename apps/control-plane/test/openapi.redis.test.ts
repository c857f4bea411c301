// The served OpenAPI document (/docs/json) must be what the route schemas are — OpenAPI 3.1,
// whose Schema Object is JSON Schema 2020-12 (numeric exclusiveMinimum, const, type arrays) —
// and valid for a real validator, so client generators and linters accept it.
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestPlane, testPlane } from './helpers.ts';

let plane: TestPlane;
let doc: Record<string, unknown>;

beforeAll(async () => {
  plane = await testPlane();
  doc = (await plane.app.inject('/docs/json')).json();
});
afterAll(() => plane.cleanup());

function schemaKeywords(
  node: unknown,
  found = new Map<string, unknown[]>(),
): Map<string, unknown[]> {
  if (Array.isArray(node)) node.forEach((n) => schemaKeywords(n, found));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      found.set(key, [...(found.get(key) ?? []), value]);
      schemaKeywords(value, found);
    }
  }
  return found;
}

describe('OpenAPI document', () => {
  it('declares OpenAPI 3.1 with the JSON Schema 2020-12 dialect', () => {
    expect(doc['openapi']).toBe('3.1.0');
  });

  it('passes @apidevtools/swagger-parser validation (schema and spec rules)', async () => {
    // validate() dereferences in place: hand it a copy. Its error lists hundreds of ajv
    // details; the first few name the offending paths.
    const problems = await SwaggerParser.validate(structuredClone(doc) as never).then(
      () => [],
      (err: Error & { details?: { instancePath: string; message: string }[] }) =>
        (err.details ?? [{ instancePath: '', message: err.message }])
          .slice(0, 5)
          .map((d) => `${d.instancePath}: ${d.message}`),
    );
    expect(problems).toEqual([]);
  });

  it('uses no OpenAPI 3.0-only keywords (nullable, boolean exclusiveMinimum/Maximum)', () => {
    const keywords = schemaKeywords(doc['paths']);
    expect(keywords.has('nullable')).toBe(false);
    for (const key of ['exclusiveMinimum', 'exclusiveMaximum']) {
      for (const value of keywords.get(key) ?? []) expect(typeof value, key).toBe('number');
    }
  });
});
