// All dashboards, rendered to the JSON files Grafana provisions (infra/grafana/dashboards).
import { controlPlaneDashboard } from './dashboards/control-plane.ts';
import { inferenceDashboard } from './dashboards/inference.ts';
import { poolsDashboard } from './dashboards/pools.ts';
import { runDashboard } from './dashboards/run.ts';
import type { GrafanaDashboard } from './panels.ts';

export const DASHBOARDS: Readonly<Record<string, () => GrafanaDashboard>> = {
  'anneal-run.json': runDashboard,
  'anneal-pools.json': poolsDashboard,
  'anneal-inference.json': inferenceDashboard,
  'anneal-control-plane.json': controlPlaneDashboard,
};

/** File name → file content, exactly as committed. */
export function renderDashboards(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [file, build] of Object.entries(DASHBOARDS)) {
    files.set(file, `${JSON.stringify(build(), null, 2)}\n`);
  }
  return files;
}
