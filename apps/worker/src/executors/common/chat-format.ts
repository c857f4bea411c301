// The chat format a run's rollouts use, for the search_web tool they were given: the base
// model's (RunResources.chatFormat — the marker format or its own chat template, whose tools
// block then states this tool's limits), else the marker format of the run's tokenizer.
import { type ChatFormat, type SearchWebTool, createToolCallFormat } from '@anneal/envs';
import type { RunResources } from '../types.ts';

export function chatFormatFor(resources: RunResources, tool: SearchWebTool): ChatFormat {
  if (resources.chatFormat === undefined) {
    return createToolCallFormat(resources.tokenizer, resources.toolMarkers);
  }
  return resources.chatFormat({
    resultsPerCall: tool.render.resultsPerCall,
    maxQueryLength: tool.limits.maxQueryLength,
  });
}
