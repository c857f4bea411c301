// `npm run gen:wasm -w @anneal/rl`: step-kernel.wat -> src/step-wasm-bytes.ts (commit the result).
import { writeFile } from 'node:fs/promises';
import { compileKernel, GENERATED_TS, renderGeneratedModule } from './compile.ts';

const bytes = await compileKernel();
await writeFile(GENERATED_TS, renderGeneratedModule(bytes));
console.log(`wrote ${GENERATED_TS.pathname} (${bytes.length} bytes of wasm)`);
