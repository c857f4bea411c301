// A run an executor finds it cannot do however often it is retried: a data source the catalogue
// lacks, tool limits the search_web tool refuses, rubrics that need an LLM judge when none is
// configured. The runtime fails such a run at once (no BullMQ retries), as it does a
// RunSetupError; the message names the spec field.
export class ExecutorSetupError extends Error {
  override name = 'ExecutorSetupError';
}
