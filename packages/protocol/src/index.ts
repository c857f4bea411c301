// @anneal/protocol: run specs, job payloads, events, operator config, API types and error codes.
export * from './names.ts';
export * from './document.ts';
export * from './run-spec/index.ts';
export * from './run-spec/kind.ts';
export * from './run-state.ts';
export * from './step-record.ts';
export * from './events.ts';
export * from './jobs.ts';
export * from './control.ts';
export * from './operator-config.ts';
export * from './operator-config-parse.ts';
export * from './resolve.ts';
export * from './capabilities.ts';
export * from './datasets.ts';
export * from './errors.ts';
export * from './api.ts';
export * from './spec-reference.ts';
