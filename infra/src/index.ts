export {
  dashboardExpressions,
  kedaExpressions,
  listExpressions,
  readDashboards,
  ruleExpressions,
  type ExpressionKind,
  type PromExpression,
} from './expressions.ts';
export { DASHBOARDS, renderDashboards } from './grafana/render.ts';
export { DATASOURCE_UID, type GrafanaDashboard, type GrafanaPanel } from './grafana/panels.ts';
export * from './paths.ts';
export {
  GRAFANA_INTERVALS,
  expandGrafanaVariables,
  labelValuesMetric,
  seriesNamesIn,
} from './promql.ts';
export { assertPromtool, promtool, promtoolPath } from './promtool.ts';
export { checkExpressionsParse } from './parse-check.ts';
export { alertProbe } from './alert-probe.ts';
export {
  SYNTHETIC_SERIES,
  VLLM_METRICS,
  recordedSeriesNames,
  unknownSeriesReason,
  vllmSeriesNames,
} from './known-series.ts';
export {
  PLATFORM_ENV_VARS,
  appEnvVars,
  cliEnvVars,
  durationSeconds,
  loadCompose,
  loadK8s,
  readDockerfile,
  type ComposeFile,
  type ComposeService,
  type Dockerfile,
  type K8sObject,
} from './deploy.ts';
export {
  localPrometheusConfig,
  type LocalPrometheusOptions,
  type LocalTargets,
} from './local-prometheus.ts';
export {
  prometheusPath,
  startPrometheus,
  type LivePrometheus,
  type PromSample,
} from './live-prometheus.ts';
