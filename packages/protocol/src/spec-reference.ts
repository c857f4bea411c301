// Flattens a run-spec schema into reference rows (path, type, default, description) so docs
// can be generated from, and checked against, the schema itself.
import type { TSchema } from '@sinclair/typebox';
import { RUN_SPEC_SCHEMAS } from './run-spec/index.ts';
import type { RunKind } from './run-spec/common.ts';

export interface SpecReferenceRow {
  /** Dotted path, e.g. `rollout.groupSize`. */
  path: string;
  type: string;
  /** JSON of the default, or undefined when the field has none (optional or required). */
  default?: string;
  description: string;
}

function typeName(schema: TSchema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as TSchema[]).map(typeName).join(' | ');
  if (schema.type === 'array') return `${typeName(schema.items as TSchema)}[]`;
  if (schema.type === 'object' && schema.patternProperties) return 'map';
  return String(schema.type ?? 'any');
}

function walk(schema: TSchema, prefix: string, rows: SpecReferenceRow[]): void {
  const properties = schema.properties as Record<string, TSchema> | undefined;
  if (!properties) return;
  for (const [key, child] of Object.entries(properties)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const isSection = child.type === 'object' && child.properties !== undefined;
    if (
      isSection &&
      child.default !== undefined &&
      Object.keys(child.default as object).length === 0
    ) {
      walk(child, path, rows);
      continue;
    }
    rows.push({
      path,
      type: typeName(child),
      ...(child.default !== undefined && { default: JSON.stringify(child.default) }),
      description: String(child.description ?? ''),
    });
    if (isSection) walk(child, path, rows);
  }
}

/** Reference rows of one kind's spec, in schema order. */
export function runSpecReference(kind: RunKind): SpecReferenceRow[] {
  const rows: SpecReferenceRow[] = [];
  walk(RUN_SPEC_SCHEMAS[kind], '', rows);
  return rows;
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/** Markdown tables (one per kind) for docs/api.md "Run spec reference"; a test keeps them in sync. */
export function renderSpecReferenceMarkdown(): string {
  const sections = (Object.keys(RUN_SPEC_SCHEMAS) as RunKind[]).map((kind) => {
    const rows = runSpecReference(kind)
      .filter((row) => row.path !== 'kind')
      .map(
        (row) =>
          `| \`${row.path}\` | ${escapeCell(row.type)} | ${row.default === undefined ? '—' : `\`${escapeCell(row.default)}\``} | ${escapeCell(row.description)} |`,
      );
    return [
      `#### kind: ${kind}`,
      '',
      '| field | type | default | description |',
      '|---|---|---|---|',
      ...rows,
    ].join('\n');
  });
  return sections.join('\n\n') + '\n';
}
