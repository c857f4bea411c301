// `npm run gen:wasm -w @anneal/engines`: each kernel's .wat -> its generated module under src/
// (commit the results).
import { generateKernel } from '@anneal/wasm-tools';
import { DECODE_KERNEL, JSON_KERNEL } from './compile.ts';

await generateKernel(JSON_KERNEL);
await generateKernel(DECODE_KERNEL);
