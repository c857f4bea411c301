// The worker's version (anneal_build_info, registry record), from its package.json.
import pkg from '../package.json' with { type: 'json' };

export const WORKER_VERSION: string = pkg.version;
