// The step record's validation schema, derived from the step-metric table. Protocol's
// WireStepMetrics is the wire envelope (any metric name -> number | null); this schema adds what
// the table knows about its keys: their help as descriptions, and that a count, duration, token
// count or ratio is never negative (a counter fed a negative step value would otherwise fail only
// at the setter).
import { Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { STEP_METRICS, type StepMetricDefinition, type StepMetricTable } from './step-metrics.ts';
import { recordBindings } from '@anneal/protocol';

const anyValue = () => Type.Union([Type.Number(), Type.Null()]);

/** Values that cannot be negative: anything with a unit, and whatever feeds a counter or histogram. */
function nonNegative(row: StepMetricDefinition): boolean {
  return row.unit !== 'none' || (row.series !== undefined && row.series.type !== 'gauge');
}

function valueSchema(row: StepMetricDefinition): TSchema {
  const number = nonNegative(row) ? Type.Number({ minimum: 0 }) : Type.Number();
  return Type.Union([number, Type.Null()], { description: row.help });
}

/** The record schema of `table`: its keys typed, other keys (custom metrics) any number or null. */
export function stepRecordSchema(table: StepMetricTable = STEP_METRICS) {
  const properties: Record<string, TSchema> = {};
  for (const row of Object.values(table)) {
    for (const { key } of recordBindings(row)) properties[key] = Type.Optional(valueSchema(row));
  }
  return Type.Object(properties, {
    additionalProperties: anyValue(),
    description: 'Step-record metrics: record key -> value, null when not reported.',
  });
}

export const StepRecordSchema = stepRecordSchema();

/** The first problem of a step record as `metrics/<key>: <message>`; undefined when it is valid. */
export function stepRecordError(
  metrics: Readonly<Record<string, unknown>>,
  schema: TSchema = StepRecordSchema,
): string | undefined {
  const first = Value.Errors(schema, metrics).First();
  if (!first) return undefined;
  // the path is a JSON pointer: keys with `/` (reward/qa) come escaped as `~1`
  const path = first.path.replaceAll('~1', '/').replaceAll('~0', '~');
  return `metrics${path}: ${first.message}`;
}
