import { describe, expect, it } from 'vitest';
import { compareGenerated } from '@anneal/wasm-tools';
import { STEP_KERNEL } from '../wasm/compile.ts';
import { STEP_KERNEL_BASE64, STEP_KERNEL_BYTES } from './step-wasm-bytes.ts';

describe('src/step-wasm-bytes.ts (generated from wasm/step-kernel.wat)', () => {
  it('matches a fresh compile of the .wat byte for byte (else: npm run gen:wasm -w @anneal/rl)', async () => {
    const drift = await compareGenerated(STEP_KERNEL, STEP_KERNEL_BASE64);
    expect(drift).toEqual({ committedBytes: STEP_KERNEL_BYTES, same: true });
  });
});
