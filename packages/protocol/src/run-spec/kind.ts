import { Type } from '@sinclair/typebox';
import { RUN_KINDS } from './common.ts';

export const RunKindSchema = Type.Union(
  RUN_KINDS.map((k) => Type.Literal(k)),
  { description: 'Run kind.' },
);
