// A run spec reaches only the endpoints the operator registered: specs name endpoints (and
// models, datasets, pools) by registered name, never by address. Proved two ways: the run-spec
// schema in the served OpenAPI document has no field that accepts a URL other than free text
// (display name, label values) and no object that accepts unknown fields; and submissions that
// put a URL, an unregistered name or an extra address field where an endpoint goes are refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonSchema } from './fuzz-arbitraries.ts';
import { type TestPlane, submit, testPlane } from './helpers.ts';

const ADDRESSES = [
  'http://evil.example:8000/v1',
  'https://evil.example',
  '//evil.example/x',
  'file:///etc/passwd',
  'redis://evil.example:6379',
  '10.0.0.1:8000',
];
/** Free-text fields: shown and filtered on, never resolved to anything. */
const FREE_TEXT = ['/labels/*', '/name'];
const ENDPOINT_FIELDS = ['inference', 'trainer', 'search', 'rewardModel', 'judge'];

let plane: TestPlane;
let spec: JsonSchema;

beforeAll(async () => {
  plane = await testPlane();
  const doc = (await plane.app.inject('/docs/json')).json();
  spec = doc.paths['/v1/runs'].post.requestBody.content['application/json'].schema;
});
afterAll(() => plane.cleanup());

function accepts(schema: JsonSchema, value: string): boolean {
  return (
    (schema.pattern === undefined || new RegExp(schema.pattern, 'u').test(value)) &&
    (schema.enum === undefined || schema.enum.includes(value)) &&
    (schema.const === undefined || schema.const === value) &&
    (schema.maxLength === undefined || value.length <= schema.maxLength)
  );
}

/** Walks every alternative of every kind: string leaves that accept an address, open objects. */
function survey(schema: JsonSchema) {
  const addressable = new Set<string>();
  const open = new Set<string>();
  const walk = (node: JsonSchema | undefined, path: string): void => {
    if (!node) return;
    for (const alternative of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])])
      walk(alternative, path);
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (types.includes('string') && ADDRESSES.some((a) => accepts(node, a))) addressable.add(path);
    if (types.includes('object')) {
      const extra = node.additionalProperties;
      if (extra === undefined || extra === true) open.add(path || '/');
      if (typeof extra === 'object') walk(extra, `${path}/*`);
    }
    for (const [key, child] of Object.entries(node.properties ?? {})) walk(child, `${path}/${key}`);
    walk(node.items, `${path}/#`);
  };
  walk(schema, '');
  return { addressable: [...addressable].sort(), open: [...open].sort() };
}

describe('run specs name endpoints, never addresses', () => {
  it('has no spec field that takes an address except free text, and no open object', () => {
    const { addressable, open } = survey(spec);
    expect(addressable).toEqual(FREE_TEXT);
    expect(open).toEqual([]);
  });

  it('documents every endpoint field of every kind as a registered name', () => {
    for (const alternative of spec.anyOf ?? []) {
      const kind = String(alternative.properties?.['kind']?.enum?.[0]);
      const endpoints = alternative.properties?.['endpoints'];
      expect(endpoints?.additionalProperties, kind).toBe(false);
      expect(Object.keys(endpoints?.properties ?? {}).sort(), kind).toEqual(
        [...ENDPOINT_FIELDS].sort(),
      );
    }
  });

  it('refuses a URL, an unregistered name, or an address field where an endpoint goes', async () => {
    const refused: string[] = [];
    const expectRefusal = async (body: object, code: string, pointer: string) => {
      const response = await submit(plane.app, JSON.stringify(body));
      const problem = response.json<{ code?: string; errors?: { path: string }[] }>();
      const paths = (problem.errors ?? []).map((e) => e.path);
      if (response.statusCode !== 400 || problem.code !== code || !paths.includes(pointer))
        refused.push(
          `${JSON.stringify(body)}: expected 400 ${code} at ${pointer}, got ${response.statusCode} ${problem.code ?? ''} ${JSON.stringify(paths)}`,
        );
    };
    for (const kind of ['sft', 'rm', 'grpo', 'eval']) {
      for (const field of ENDPOINT_FIELDS) {
        for (const address of ADDRESSES)
          await expectRefusal(
            { kind, endpoints: { [field]: address } },
            'ANNEAL_ERR_RUN_SPEC_INVALID',
            `/endpoints/${field}`,
          );
        await expectRefusal(
          { kind, endpoints: { [field]: 'not-registered' } },
          'ANNEAL_ERR_UNKNOWN_RESOURCE',
          `/endpoints/${field}`,
        );
      }
      for (const extra of ['url', 'inferenceUrl', 'baseUrl'])
        await expectRefusal(
          { kind, endpoints: { [extra]: ADDRESSES[0] } },
          'ANNEAL_ERR_RUN_SPEC_INVALID',
          `/endpoints/${extra}`,
        );
      await expectRefusal(
        { kind, model: { base: ADDRESSES[0] } },
        'ANNEAL_ERR_RUN_SPEC_INVALID',
        '/model/base',
      );
      await expectRefusal({ kind, pool: ADDRESSES[0] }, 'ANNEAL_ERR_RUN_SPEC_INVALID', '/pool');
    }
    expect(refused).toEqual([]);
  }, 60_000);

  it('accepts the registered names (the refusals above are about the names)', async () => {
    const response = await submit(
      plane.app,
      JSON.stringify({
        kind: 'sft',
        endpoints: { inference: 'embedded', trainer: 'embedded', search: 'local' },
      }),
    );
    expect(response.statusCode).toBe(201);
  });
});
