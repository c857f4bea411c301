// What GET /console/catalogue.json returns: the server's own tables the web console draws from
// (run states and kinds for its filters, the step-curve panels derived from the step metric
// table), so the browser bundle carries neither the tables nor the packages holding them.
import { Type, type Static } from '@sinclair/typebox';

export const StepMetricPanel = Type.Object(
  {
    id: Type.String({ description: 'The step metric table row.' }),
    title: Type.String(),
    section: Type.String({
      description: 'A dashboard section id; rows the Run dashboard does not chart are in `more`.',
    }),
    featured: Type.Boolean({
      description: 'On the Run dashboard (the recipe’s metrics to watch); the rest on demand.',
    }),
    unit: Type.String(),
    kinds: Type.Array(Type.String(), { description: 'Run kinds that record the metric.' }),
    help: Type.String(),
    lines: Type.Array(
      Type.Object({ key: Type.String(), legend: Type.String() }, { additionalProperties: false }),
      { description: 'One line each: the record key and, for labelled rows, the label value.' },
    ),
  },
  { additionalProperties: false },
);
export type StepMetricPanel = Static<typeof StepMetricPanel>;

export const ConsoleCatalogue = Type.Object(
  {
    states: Type.Array(Type.String()),
    kinds: Type.Array(Type.String()),
    sections: Type.Array(
      Type.Object({ id: Type.String(), title: Type.String() }, { additionalProperties: false }),
    ),
    panels: Type.Array(StepMetricPanel),
  },
  { additionalProperties: false },
);
export type ConsoleCatalogue = Static<typeof ConsoleCatalogue>;
