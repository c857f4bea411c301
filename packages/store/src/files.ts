// `@anneal/store/files`: the store's file-system half on its own — the rollout ledger and the
// artifact layout — without Redis or BullMQ behind the package root. For code that writes a
// run's files but must not hold a Redis client: the worker's executors (apps/worker/src/
// executors/README.md), whose rule `npm run lint` checks (.dependency-cruiser.cjs).
export * from './artifacts.ts';
export * from './rollout-ledger/index.ts';
