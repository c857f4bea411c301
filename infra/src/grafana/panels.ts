// Small builders for Grafana dashboard JSON (schema 39, Grafana 10/11). Every panel and every
// query names the provisioned Prometheus datasource by its fixed uid.

export const DATASOURCE_UID = 'anneal-prometheus';
export const DATASOURCE = { type: 'prometheus', uid: DATASOURCE_UID } as const;

export interface Query {
  expr: string;
  legend?: string;
}

export interface PanelSpec {
  title: string;
  description?: string;
  queries: readonly Query[];
  /** Grafana unit id: s, short, percentunit, reqps, … */
  unit?: string;
  /**
   * `row`: a full-width row header grouping the panels after it (no queries). `trend`,
   * `xychart`, `table`: instant queries as tables, shaped by `transformations` (a curve against
   * a numeric x field such as a tool-call budget, a scatter, a table of label sets).
   */
  kind?: PanelKind;
  stacked?: boolean;
  /** Width in grid columns (24 per row); default 12. */
  width?: number;
  height?: number;
  min?: number;
  max?: number;
  /** Grafana transformations applied to the query results, in order. */
  transformations?: readonly GrafanaTransformation[];
  /** Panel options merged over the kind's defaults (e.g. a trend panel's `xField`). */
  options?: Record<string, unknown>;
  /** Field units that differ from the panel's `unit` (e.g. the x field of a trend panel). */
  fieldUnits?: Readonly<Record<string, string>>;
}

export type PanelKind = 'timeseries' | 'stat' | 'row' | 'trend' | 'xychart' | 'table';

export interface GrafanaTransformation {
  id: string;
  options: Record<string, unknown>;
}

/** Kinds whose queries are instant tables rather than ranges over time. */
const TABLE_KINDS: readonly PanelKind[] = ['trend', 'xychart', 'table'];

export interface GrafanaTarget {
  refId: string;
  datasource: typeof DATASOURCE;
  expr: string;
  legendFormat: string;
  range: boolean;
  instant: boolean;
  /** `table` for the instant-table kinds (one row per label set). */
  format?: 'table';
}

export interface GrafanaPanel {
  id: number;
  type: string;
  title: string;
  description: string;
  datasource: typeof DATASOURCE;
  gridPos: { h: number; w: number; x: number; y: number };
  targets: GrafanaTarget[];
  fieldConfig: { defaults: Record<string, unknown>; overrides: unknown[] };
  options: Record<string, unknown>;
  transformations?: GrafanaTransformation[];
  /** Row panels only: expanded, with their panels laid out after them (not nested). */
  collapsed?: false;
  panels?: [];
}

export interface GrafanaVariable {
  name: string;
  label: string;
  type: 'query';
  datasource: typeof DATASOURCE;
  /** `label_values(metric, label)`. */
  definition: string;
  query: { query: string; refId: string; qryType: number };
  refresh: 2;
  sort: 1;
  includeAll: boolean;
  multi: boolean;
  allValue?: string;
  current: Record<string, never>;
  options: never[];
}

export interface GrafanaDashboard {
  uid: string;
  title: string;
  description: string;
  tags: string[];
  timezone: 'browser';
  schemaVersion: 39;
  version: 1;
  editable: true;
  graphTooltip: 1;
  refresh: string;
  time: { from: string; to: string };
  templating: { list: GrafanaVariable[] };
  annotations: { list: unknown[] };
  links: unknown[];
  panels: GrafanaPanel[];
}

const REF_IDS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

function customDefaults(spec: PanelSpec): Record<string, unknown> {
  switch (spec.kind ?? 'timeseries') {
    case 'timeseries':
      return {
        drawStyle: 'line',
        lineWidth: 1,
        fillOpacity: spec.stacked ? 30 : 0,
        showPoints: 'never',
        spanNulls: true,
        stacking: { mode: spec.stacked ? 'normal' : 'none', group: 'A' },
      };
    case 'trend': // a curve over x: every point drawn, gaps (missing cells) left open
      return { drawStyle: 'line', lineWidth: 1, fillOpacity: 0, showPoints: 'always' };
    case 'xychart':
      return { show: 'points', pointSize: { fixed: 6 } };
    default:
      return {};
  }
}

function fieldDefaults(spec: PanelSpec): Record<string, unknown> {
  return {
    unit: spec.unit ?? 'short',
    ...(spec.min === undefined ? {} : { min: spec.min }),
    ...(spec.max === undefined ? {} : { max: spec.max }),
    custom: customDefaults(spec),
  };
}

function unitOverrides(spec: PanelSpec): unknown[] {
  return Object.entries(spec.fieldUnits ?? {}).map(([field, unit]) => ({
    matcher: { id: 'byName', options: field },
    properties: [{ id: 'unit', value: unit }],
  }));
}

const LEGEND = { displayMode: 'list', placement: 'bottom', showLegend: true };

function optionDefaults(kind: PanelKind): Record<string, unknown> {
  switch (kind) {
    case 'stat':
      return {
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
        colorMode: 'value',
      };
    case 'table':
      return { showHeader: true, cellHeight: 'sm' };
    default:
      return { legend: LEGEND, tooltip: { mode: 'multi', sort: 'none' } };
  }
}

function rowPanel(spec: PanelSpec, id: number, y: number): GrafanaPanel {
  return {
    id,
    type: 'row',
    title: spec.title,
    description: spec.description ?? '',
    datasource: DATASOURCE,
    gridPos: { h: 1, w: 24, x: 0, y },
    targets: [],
    fieldConfig: { defaults: {}, overrides: [] },
    options: {},
    collapsed: false,
    panels: [],
  };
}

/**
 * Lays panels out left to right, wrapping at 24 columns; a row header starts a new line of its
 * own. Ids are 1..n in order.
 */
export function layout(specs: readonly PanelSpec[]): GrafanaPanel[] {
  let x = 0;
  let y = 0;
  let rowHeight = 0;
  return specs.map((spec, index) => {
    if (spec.kind === 'row') {
      y += rowHeight;
      x = 0;
      rowHeight = 0;
      const row = rowPanel(spec, index + 1, y);
      y += 1;
      return row;
    }
    const w = spec.width ?? 12;
    const h = spec.height ?? 8;
    if (x + w > 24) {
      x = 0;
      y += rowHeight;
      rowHeight = 0;
    }
    const gridPos = { h, w, x, y };
    x += w;
    rowHeight = Math.max(rowHeight, h);
    const kind = spec.kind ?? 'timeseries';
    const table = TABLE_KINDS.includes(kind);
    return {
      id: index + 1,
      type: kind,
      title: spec.title,
      description: spec.description ?? '',
      datasource: DATASOURCE,
      gridPos,
      targets: spec.queries.map((q, i) => ({
        refId: REF_IDS[i] ?? `Q${i}`,
        datasource: DATASOURCE,
        expr: q.expr,
        legendFormat: q.legend ?? '__auto',
        range: kind === 'timeseries',
        instant: kind === 'stat' || table,
        ...(table ? { format: 'table' as const } : {}),
      })),
      fieldConfig: { defaults: fieldDefaults(spec), overrides: unitOverrides(spec) },
      options: { ...optionDefaults(kind), ...spec.options },
      ...(spec.transformations ? { transformations: [...spec.transformations] } : {}),
    };
  });
}

export function variable(
  name: string,
  label: string,
  metric: string,
  options: { multi?: boolean } = {},
): GrafanaVariable {
  const definition = `label_values(${metric}, ${name})`;
  const multi = options.multi ?? false;
  return {
    name,
    label,
    type: 'query',
    datasource: DATASOURCE,
    definition,
    query: { query: definition, refId: 'PrometheusVariableQueryEditor-VariableQuery', qryType: 1 },
    refresh: 2,
    sort: 1,
    includeAll: multi,
    multi,
    ...(multi ? { allValue: '.*' } : {}),
    current: {},
    options: [],
  };
}

export function dashboard(fields: {
  uid: string;
  title: string;
  description: string;
  variables?: GrafanaVariable[];
  panels: readonly PanelSpec[];
}): GrafanaDashboard {
  return {
    uid: fields.uid,
    title: fields.title,
    description: fields.description,
    tags: ['anneal'],
    timezone: 'browser',
    schemaVersion: 39,
    version: 1,
    editable: true,
    graphTooltip: 1,
    refresh: '30s',
    time: { from: 'now-3h', to: 'now' },
    templating: { list: fields.variables ?? [] },
    annotations: { list: [] },
    links: [],
    panels: layout(fields.panels),
  };
}
