// Environment variables -> typed values for a TypeBox object schema of the variables a process
// reads (the control plane's and the worker's env.ts). Value.Convert turns a string into what
// its property's schema wants, but for an integer it truncates ("12.5" becomes 12) instead of
// leaving the value for validation to refuse; an integer variable whose text is not an integer
// is kept as its text here, so validation names it.
import { Kind, type TObject, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

const INTEGER_TEXT = /^[+-]?\d+$/;

/** The schema's variables from `source` (empty ones left out), defaults applied, converted;
 * not validated (the caller does, and names the variable). */
export function envValues(
  schema: TObject,
  source: Readonly<Record<string, string | undefined>>,
): Record<string, unknown> {
  const picked: Record<string, string> = {};
  for (const name of Object.keys(schema.properties)) {
    const text = source[name];
    if (text !== undefined && text !== '') picked[name] = text;
  }
  const values = Value.Convert(schema, Value.Default(schema, { ...picked })) as Record<
    string,
    unknown
  >;
  for (const [name, text] of Object.entries(picked)) {
    const property = schema.properties[name] as TSchema;
    if (property[Kind] === 'Integer' && !INTEGER_TEXT.test(text)) values[name] = text;
  }
  return values;
}
