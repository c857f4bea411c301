// The one table of what `npm test`, `npm run demo`, `npm run soak` and `npm run bench` need from
// the machine besides npm packages: how to get each piece by hand, and which packages of which
// package manager provide it (scripts/install-plan.mjs installs from here; .ci/run has no list of
// its own). Node built-ins only: this runs before dependencies are installed.

/**
 * id -> { how, apt, brew, brewCask }: apt / brew / brewCask list the packages that provide it
 * (absent: that manager cannot install it). `override` names the environment variable that points
 * at another copy; when it is set, nothing is installed for it (the user chose that copy).
 */
export const PREREQUISITES = {
  node: {
    how: 'install Node.js 20.19 or newer (https://nodejs.org, or `nvm install 24`)',
  },
  redis: {
    how:
      'set REDIS_URL to a reachable Redis, start one on 127.0.0.1:6379, or install redis-server ' +
      '(apt-get install -y redis-server | brew install redis | docker compose up -d redis)',
    apt: ['redis-server'],
    brew: ['redis'],
    override: 'REDIS_URL',
  },
  prometheus: {
    how:
      'apt-get install -y prometheus | brew install prometheus | a release from ' +
      'https://prometheus.io/download/ with PROMETHEUS_BIN=/path/to/prometheus',
    apt: ['prometheus'],
    brew: ['prometheus'],
    override: 'PROMETHEUS_BIN',
  },
  promtool: {
    how:
      'ships with Prometheus: apt-get install -y prometheus | brew install prometheus | a release ' +
      'from https://prometheus.io/download/ with PROMTOOL_BIN=/path/to/promtool',
    apt: ['prometheus'],
    brew: ['prometheus'],
    override: 'PROMTOOL_BIN',
  },
  // Renders the eval chart (GET /v1/runs/{id}/results/curve.svg) in its test.
  'rsvg-convert': {
    how: 'apt-get install -y librsvg2-bin | brew install librsvg',
    apt: ['librsvg2-bin'],
    brew: ['librsvg'],
  },
  // The web console's tests drive a headless Chromium; Debian's fonts are only a recommendation
  // of the package, and text needs one to lay out.
  chromium: {
    how:
      'apt-get install -y chromium | brew install --cask chromium | any Chrome or Chromium with ' +
      'CHROMIUM_BIN=/path/to/chrome',
    apt: ['chromium', 'fonts-liberation'],
    brewCask: ['chromium'],
    override: 'CHROMIUM_BIN',
  },
};

/**
 * What each task needs. The test suite drives a real Prometheus and promtool (infra), renders
 * the eval chart SVG with rsvg-convert (control plane's results route) and opens the web console
 * in a headless Chromium (control plane's console tests).
 */
export const NEEDS = {
  test: ['node', 'redis', 'prometheus', 'promtool', 'rsvg-convert', 'chromium'],
  demo: ['node', 'redis'],
  // bench/console opens the console's runs list in a headless Chromium
  bench: ['node', 'redis', 'chromium'],
  soak: ['node', 'redis'],
};
