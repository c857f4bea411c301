// Writes infra/grafana/dashboards/*.json from src/grafana/dashboards/*.ts.
//   npm run gen:dashboards -w @anneal/infra
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderDashboards } from '../src/grafana/render.ts';
import { DASHBOARDS_DIR } from '../src/paths.ts';

mkdirSync(DASHBOARDS_DIR, { recursive: true });
for (const [file, content] of renderDashboards()) {
  writeFileSync(path.join(DASHBOARDS_DIR, file), content);
  console.log(`wrote ${path.join(DASHBOARDS_DIR, file)}`);
}
