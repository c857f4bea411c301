// Locations of the deployment assets, relative to this workspace.
import { fileURLToPath } from 'node:url';

const at = (relative: string) => fileURLToPath(new URL(`../${relative}`, import.meta.url));

export const INFRA_DIR = at('');
export const REPO_ROOT = at('../');
export const PROMETHEUS_DIR = at('prometheus');
export const PROMETHEUS_RULES_DIR = at('prometheus/rules');
export const PROMETHEUS_TESTS_DIR = at('prometheus/tests');
export const GRAFANA_DIR = at('grafana');
export const DASHBOARDS_DIR = at('grafana/dashboards');
export const K8S_DIR = at('k8s');
export const DOCKER_DIR = at('docker');
export const COMPOSE_FILE = at('../docker-compose.yml');
