// Run dashboard: what docs/recipe.md §7 says to watch during training, for one run_id.
import { dashboard, variable, type GrafanaDashboard } from '../panels.ts';

/** Series of the selected run; max() merges the brief overlap when a run moves between workers. */
const run = (metric: string, extra = '') => `${metric}{run_id="$run_id"${extra}}`;

export function runDashboard(): GrafanaDashboard {
  return dashboard({
    uid: 'anneal-run',
    title: 'Anneal / Run',
    description: 'One training run: reward and its components, KL, IS ratios, gradients, timing.',
    variables: [variable('run_id', 'Run', 'anneal_run_step')],
    panels: [
      {
        title: 'Step',
        kind: 'stat',
        width: 6,
        height: 4,
        queries: [{ expr: `max(${run('anneal_run_step')})` }],
      },
      {
        title: 'Since last step',
        kind: 'stat',
        unit: 's',
        width: 6,
        height: 4,
        queries: [{ expr: `time() - max(${run('anneal_run_last_step_timestamp_seconds')})` }],
      },
      {
        title: 'Generation tokens/s',
        kind: 'stat',
        unit: 'short',
        width: 6,
        height: 4,
        queries: [{ expr: `sum(${run('run_id:anneal_run_rollout_tokens:rate5m')})` }],
      },
      {
        title: 'Loss (last step)',
        kind: 'stat',
        width: 6,
        height: 4,
        queries: [{ expr: `max(${run('anneal_run_loss')})` }],
      },
      {
        title: 'Reward and its components',
        description:
          'R = r_base · s − (λ_tool·pen_tool + λ_len·pen_len), step means (docs/recipe.md §4).',
        queries: [
          { expr: `max(${run('anneal_run_reward', ',component="all"')})`, legend: 'reward R' },
          {
            expr: `max(${run('anneal_run_base_reward', ',component="all"')})`,
            legend: 'base reward',
          },
          { expr: `max(${run('anneal_run_preference_score')})`, legend: 'preference score' },
          { expr: `max(${run('anneal_run_tool_penalty')})`, legend: 'tool penalty' },
          { expr: `max(${run('anneal_run_length_penalty')})`, legend: 'length penalty' },
        ],
      },
      {
        title: 'Reward by data component (QA vs rubric)',
        queries: [
          {
            expr: `max by (component) (${run('anneal_run_reward', ',component=~"qa|rubric"')})`,
            legend: 'reward {{component}}',
          },
          {
            expr: `max by (component) (${run('anneal_run_base_reward', ',component=~"qa|rubric"')})`,
            legend: 'base reward {{component}}',
          },
        ],
      },
      {
        title: 'Tool calls per rollout',
        width: 8,
        min: 0,
        queries: [
          { expr: `max(${run('anneal_run_tool_calls_per_rollout')})`, legend: 'tool calls' },
        ],
      },
      {
        title: 'Response length',
        width: 8,
        min: 0,
        queries: [{ expr: `max(${run('anneal_run_response_length_tokens')})`, legend: 'tokens' }],
      },
      {
        title: 'Zero-variance groups',
        width: 8,
        min: 0,
        queries: [{ expr: `max(${run('anneal_run_zero_variance_groups')})`, legend: 'groups' }],
      },
      {
        title: 'Train–inference KL',
        description:
          'k3 is the reported KL; it should drift up mildly within 1e-3 (docs/recipe.md §2, §7).',
        queries: [
          {
            expr: `max by (estimator) (${run('anneal_run_train_inference_kl')})`,
            legend: '{{estimator}}',
          },
        ],
      },
      {
        title: 'Importance-sampling ratio',
        queries: [
          { expr: `max by (stat) (${run('anneal_run_importance_ratio')})`, legend: '{{stat}}' },
        ],
      },
      {
        title: 'IS ratios outside [0.5, 2]',
        unit: 'percentunit',
        min: 0,
        queries: [
          {
            expr: `max(${run('anneal_run_importance_ratio_out_of_range_ratio')})`,
            legend: 'fraction',
          },
        ],
      },
      {
        title: 'Gradient norm',
        description: 'Global L2 norm before clipping; brief spikes are normal (docs/recipe.md §7).',
        queries: [
          { expr: `max(${run('anneal_run_grad_norm')})`, legend: 'grad norm' },
          { expr: `${run('run_id:anneal_run_grad_norm:zscore1h')}`, legend: 'z-score (1h)' },
        ],
      },
      {
        title: 'Loss',
        queries: [{ expr: `max(${run('anneal_run_loss')})`, legend: 'loss' }],
      },
      {
        title: 'Step phase times',
        description: 'Mean seconds per step in each phase over 15 minutes.',
        unit: 's',
        stacked: true,
        queries: [
          {
            expr: run('run_id_phase:anneal_run_step_phase_duration_seconds:mean15m'),
            legend: '{{phase}}',
          },
        ],
      },
      {
        title: 'Tokens/s',
        unit: 'short',
        width: 24,
        queries: [
          { expr: run('run_id:anneal_run_rollout_tokens:rate5m'), legend: 'generated' },
          { expr: run('run_id:anneal_run_trained_tokens:rate5m'), legend: 'trained' },
        ],
      },
    ],
  });
}
