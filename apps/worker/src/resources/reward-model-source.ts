// Where a reward model's ONNX weights come from: shared by the engine factories (factories.ts)
// and the embedded engines that load them (embedded.ts), so neither imports the other for it.
export interface RewardModelSource {
  /** The operator-config name (`rewardModels.<name>`). */
  name: string;
  /** An ONNX file/directory: configured (`type: onnx`) or an rm run's final checkpoint. */
  path: string;
  executionProvider: 'cpu' | 'cuda';
  /** The rm run the path came from, when `type: run`. */
  fromRun?: string;
}
