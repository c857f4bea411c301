// The rollout ledger on the run's artifact directory (layout.ts): written by GRPO workers, read
// by the control plane. Files only; nothing of it is in Redis but the committing attempt of each
// step (the step record's `attempt`), which decides whose copy a step is.
export * from './layout.ts';
export * from './codec.ts';
export * from './write.ts';
export * from './read.ts';
export * from './retention.ts';
