// Build-time only: the step kernel's .wat and the module generated from it (tools/wasm).
import type { WasmKernel } from '@anneal/wasm-tools';

export const STEP_KERNEL: WasmKernel = {
  wat: new URL('./step-kernel.wat', import.meta.url),
  generated: new URL('../src/step-wasm-bytes.ts', import.meta.url),
  features: { simd: true, multi_value: true },
  module: {
    prefix: 'STEP_KERNEL',
    command: 'npm run gen:wasm -w @anneal/rl',
    source: 'wasm/step-kernel.wat',
    what: 'The step kernel (src/step-wasm-kernel.ts) as base64; a test checks it matches the .wat.',
  },
};
