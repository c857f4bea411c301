// @anneal/rl: the math of docs/recipe.md as pure functions over typed arrays. Depends on nothing.
export { createRng, deriveSeed, type Rng } from './rng.ts';
export { assertOffsets, packRagged, rolloutCount, type RaggedBatch } from './ragged.ts';
export {
  batchGroupAdvantages,
  groupAdvantages,
  isZeroVarianceGroup,
  STD_EPSILON,
  type AdvantageOptions,
} from './advantages.ts';
export {
  DEFAULT_TIS_CLIP_MAX,
  maskedIsRatios,
  tokenIsRatios,
  truncatedIsRatios,
} from './is-ratio.ts';
export { maskedSequenceIsRatios, sequenceIsRatios } from './sequence-ratio.ts';
export { klK1, klK3, trainInferenceKl, type TrainInferenceKl } from './kl.ts';
export { RATIO_BAND_HIGH, RATIO_BAND_LOW, ratioStats, type RatioStats } from './ratio-stats.ts';
export { grpoObjective, grpoObjectiveGradient, type GrpoBatch } from './grpo-objective.ts';
export {
  perTokenAdvantages,
  tokenAdvantageScale,
  weightedTokenAdvantages,
  type LossReduction,
} from './token-advantages.ts';
export {
  isWeights,
  needsIsWeights,
  sequenceIsWeights,
  tokenIsWeights,
  weightedObjective,
  type IsOptions,
  type IsWeights,
} from './is-weights.ts';
export { stepTokenMathScalar, type StepBatch, type StepTokenStats } from './step-math.ts';
export { stepRunsInPlace, stepTokenMath, stepTokenMathWasm } from './step-math-wasm.ts';
export { wasmStepErrorBounds } from './step-math-wasm-bounds.ts';
export {
  createStepBuffers,
  releaseStepBuffers,
  STAGE_TOKENS,
  wasmSimdAvailable,
  type StepBuffers,
} from './step-wasm-kernel.ts';
export { compositeReward, compositeRewards } from './composite-reward.ts';
export {
  anchoredToolPenalty,
  drawToolBaseline,
  type ToolPenalty,
  type ToolPenaltyParams,
  type ToolUsage,
} from './tool-penalty.ts';
export {
  anchoredLengthPenalty,
  PREFERRED_THRESHOLD,
  ratioExcess,
  type LengthOutcomes,
  type LengthPenalty,
} from './length-penalty.ts';
export { efficiencyPenalties, efficiencyPenalty } from './efficiency-penalty.ts';
export {
  scoreGroup,
  type GroupOutcomes,
  type GroupScore,
  type RewardConfig,
} from './group-reward.ts';
export {
  btLoss,
  btLossGradient,
  logSigmoid,
  preferenceProbability,
  sigmoid,
  symmetricBtLoss,
} from './bradley-terry.ts';
export { allocatePromptMix, samplePromptMix } from './prompt-mix.ts';
export { DEFAULT_CALIBRATION_K, keepForCalibration, passAtKFilter } from './pass-at-k.ts';
