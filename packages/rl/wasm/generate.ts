// `npm run gen:wasm -w @anneal/rl`: step-kernel.wat -> src/step-wasm-bytes.ts (commit the result).
import { generateKernel } from '@anneal/wasm-tools';
import { STEP_KERNEL } from './compile.ts';

await generateKernel(STEP_KERNEL);
