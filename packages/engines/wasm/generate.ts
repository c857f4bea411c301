// `npm run gen:wasm -w @anneal/engines`: json-kernel.wat -> src/http/json-kernel-bytes.ts (commit
// the result).
import { generateKernel } from '@anneal/wasm-tools';
import { JSON_KERNEL } from './compile.ts';

await generateKernel(JSON_KERNEL);
