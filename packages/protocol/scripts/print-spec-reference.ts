// Prints the run-spec reference tables for docs/api.md: `npx tsx packages/protocol/scripts/print-spec-reference.ts`.
import { renderSpecReferenceMarkdown } from '../src/index.ts';

process.stdout.write(renderSpecReferenceMarkdown());
