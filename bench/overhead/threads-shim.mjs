// Entry of bench/overhead's reader threads: the thread that starts them runs under tsx with the
// "@anneal/source" condition, and a worker thread inherits neither, so register both (as
// @anneal/engines' worker-shim.mjs does for its own threads), then load the TypeScript worker.
import { register } from 'node:module';
import { workerData } from 'node:worker_threads';

register(
  'data:text/javascript,export const resolve = (s, c, next) => ' +
    'next(s, { ...c, conditions: [...new Set(["@anneal/source", ...c.conditions])] });',
);
const tsx = await import('tsx/esm/api');
tsx.register();
await import(workerData.entry);
