export {
  compareGenerated,
  compileKernel,
  compileWat,
  embeddedBytes,
  generateKernel,
  renderWasmModule,
} from './compile.ts';
export type { GeneratedModule, WasmKernel, WatFeatures } from './compile.ts';
