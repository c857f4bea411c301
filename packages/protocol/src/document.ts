// JSON/YAML text -> value, and schema validation that reports JSON pointers (and YAML lines).
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { LineCounter, parseDocument } from 'yaml';
import { DOCUMENT_LIMITS, scanText, treeIssues, valueIssues } from './document-limits.ts';

/** One problem with an input document: JSON pointer of the field, message, and source line. */
import type { Issue, Parsed } from './issue.ts';

export type { Issue, Parsed } from './issue.ts';

/** A parsed document plus a way to find the source line of a JSON pointer. */
export interface SourceDocument {
  value: unknown;
  lineOf(pointer: string): number | undefined;
}

const MAX_ISSUES = 50;

export function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Pointer segments as a YAML path: numeric segments index sequences. */
function pointerPath(pointer: string): Array<string | number> {
  return pointerSegments(pointer).map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** JSON text -> value, bounded like parseSourceText; undefined when the text is not JSON. */
export function parseJsonText(text: string): Parsed<unknown> | undefined {
  const tooBig = scanText(text);
  if (tooBig !== undefined) return { ok: false, errors: [tooBig] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const issues = valueIssues(value, DOCUMENT_LIMITS, (path) => joinPointer(...path));
  return issues.length > 0 ? { ok: false, errors: issues } : { ok: true, value };
}

export function joinPointer(...segments: Array<string | number>): string {
  return segments.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

/** Parses JSON or YAML (JSON is YAML 1.2); syntax errors carry their line. Cost is bounded by
 * DOCUMENT_LIMITS (scanned before parsing, walked before converting): see document-limits.ts. */
export function parseSourceText(text: string): Parsed<SourceDocument> {
  const tooBig = scanText(text);
  if (tooBig !== undefined) return { ok: false, errors: [tooBig] };
  const lineCounter = new LineCounter();
  // Duplicate keys are found by treeIssues in one pass (the parser's own check is quadratic).
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.slice(0, MAX_ISSUES).map((e) => ({
        path: '',
        message: `syntax error: ${e.message.split('\n')[0] ?? e.code}`,
        line: lineCounter.linePos(e.pos[0]).line,
      })),
    };
  }
  const lineAt = (node: unknown): number | undefined => {
    const range = (node as { range?: [number, number, number] } | null)?.range;
    return Array.isArray(range) ? lineCounter.linePos(range[0]).line : undefined;
  };
  const structural = treeIssues(doc, DOCUMENT_LIMITS, (path) => joinPointer(...path), lineAt);
  if (structural.length > 0) return { ok: false, errors: structural };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: DOCUMENT_LIMITS.maxAliases });
  } catch (error) {
    // Alias expansion beyond maxAliasCount (a "billion laughs" document) throws here.
    return { ok: false, errors: [{ path: '', message: (error as Error).message }] };
  }
  const lineOf = (pointer: string): number | undefined => {
    const segments = pointerPath(pointer);
    for (let depth = segments.length; depth >= 0; depth--) {
      const line = lineAt(doc.getIn(segments.slice(0, depth), true));
      if (line !== undefined) return line;
    }
    return undefined;
  };
  return { ok: true, value: { value, lineOf } };
}

function describe(error: {
  path: string;
  message: string;
  value: unknown;
  schema: TSchema;
}): Issue {
  const segments = pointerSegments(error.path);
  if (error.message === 'Unexpected property') {
    return { path: error.path, message: `unknown field '${segments.at(-1) ?? ''}'` };
  }
  if (error.value === undefined) {
    return { path: error.path, message: `required field is missing` };
  }
  return { path: error.path, message: error.message.replace(/^Expected/, 'expected') };
}

/** The object variants of a union and their `type` discriminators, or undefined when the union
 * has no object variants or one of them has no `type` constant. Other variants (e.g. a string
 * shorthand) make the union `mixed`. */
function discriminators(
  schema: TSchema,
): { tags: string[]; objects: TSchema[]; mixed: boolean } | undefined {
  const variants = schema.anyOf as TSchema[] | undefined;
  if (!Array.isArray(variants)) return undefined;
  const objects = variants.filter((v) => v.type === 'object');
  const tags = objects.map(
    (v) => (v.properties as Record<string, TSchema> | undefined)?.type?.const,
  );
  if (objects.length === 0 || !tags.every((t) => typeof t === 'string')) return undefined;
  return { tags: tags as string[], objects, mixed: objects.length < variants.length };
}

/** Errors of a `type`-discriminated union: explain against the variant the value names. */
function unionIssues(schema: TSchema, value: unknown, path: string): Issue[] | undefined {
  const union = discriminators(schema);
  if (!union) return undefined;
  const { tags, objects, mixed } = union;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return mixed ? undefined : [{ path, message: 'expected a mapping' }];
  }
  const tag = (value as { type?: unknown }).type;
  const index = tags.indexOf(String(tag));
  if (typeof tag !== 'string' || index < 0) {
    return [{ path: `${path}/type`, message: `expected one of ${tags.join(', ')}` }];
  }
  const variant = objects[index] as TSchema;
  return schemaIssues(variant, value).map((i) => ({ ...i, path: path + i.path }));
}

/** Validates `value` against `schema`; returns issues sorted by path, one per path. */
export function schemaIssues(
  schema: TSchema,
  value: unknown,
  lineOf?: (pointer: string) => number | undefined,
): Issue[] {
  const byPath = new Map<string, Issue>();
  for (const error of Value.Errors(schema, value)) {
    if (byPath.has(error.path)) continue;
    const nested = unionIssues(error.schema, error.value, error.path);
    for (const issue of nested ?? [describe(error)]) {
      if (byPath.has(issue.path)) continue;
      const line = lineOf?.(issue.path);
      byPath.set(issue.path, line === undefined ? issue : { ...issue, line });
    }
    if (byPath.size >= MAX_ISSUES) break;
  }
  return [...byPath.values()].sort((a, b) => a.path.localeCompare(b.path));
}

/** Applies schema defaults to a deep copy of `value` (never mutates the input). */
export function withDefaults<T>(schema: TSchema, value: unknown): T {
  return Value.Default(schema, Value.Clone(value)) as T;
}

/** Renders issues one per line: `/rollout/groupSize (line 4): expected integer`. */
export function formatIssues(issues: readonly Issue[]): string {
  return issues
    .map(
      (i) =>
        `${i.path || '(document)'}${i.line === undefined ? '' : ` (line ${i.line})`}: ${i.message}`,
    )
    .join('\n');
}
