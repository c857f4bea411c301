// The demo's closing summary: the report's numbers, the targets, and where to look next.
import path from 'node:path';
import type { DemoDisplay } from './display.ts';
import type { DemoReport, EvalNumbers, TargetCheck } from './report.ts';
import type { DemoSizes } from './specs.ts';

const num = (v: number | null, digits = 3) => (v === null ? 'n/a' : v.toFixed(digits));
const sci = (v: number | null) => (v === null ? 'n/a' : v.toExponential(2));

function evalRow(label: string, e: EvalNumbers): string {
  return `    ${label.padEnd(14)} ${num(e.accuracy).padStart(8)} ${num(e.meanToolCalls).padStart(11)} ${num(e.meanToolCallsToolFree).padStart(22)}`;
}

const pv = (p: number | null) => (p === null ? 'n/a' : p.toPrecision(2));

/** Each recipe dimension of SFT, control and GRPO with the paired p-values. */
function comparisonLines(r: DemoReport): string[] {
  const c = r.eval.comparison;
  if (!c) return [];
  return [
    `    paired on the same questions at b=${c.budget} (${c.questions} questions): SFT / control / GRPO, p GRPO vs control, p GRPO vs SFT`,
    ...c.dimensions.map(
      (d) =>
        `      ${d.name.padEnd(18)} ${num(d.sft)} / ${num(d.control)} / ${num(d.grpo)}  ` +
        `p ${pv(d.pGrpoVsControl)}, ${pv(d.pGrpoVsSft)} (${d.test}, n=${d.questions})`,
    ),
  ];
}

/** Whether the default guardrails fired on the training runs, and what they did. */
function guardrailLine(r: DemoReport): string {
  const g = r.guardrails;
  if (!g.fired) return '  guardrails     default rules on (docs/guardrails.md); none fired';
  const list = g.firings.map((f) => `${f.run} step ${f.step} ${f.rule} -> ${f.action}`);
  return `  guardrails     ${g.firings.length} fired (${g.rollbacks} rollback(s)): ${list.join(', ')}`;
}

export function summaryLines(input: {
  report: DemoReport;
  targets: readonly TargetCheck[];
  reportPath: string;
  sizes: DemoSizes;
}): string[] {
  const { report: r, targets, sizes } = input;
  const report = path.relative(process.cwd(), input.reportPath) || input.reportPath;
  return [
    '',
    `Summary (${report})`,
    `  wall time      ${r.wallSeconds.toFixed(0)} s`,
    `  SFT            ${r.sft.steps} steps, final loss ${num(r.sft.finalLoss)}`,
    `  reward model   held-out pair accuracy ${num(r.rm.heldOutPairAccuracy)}`,
    `  GRPO           ${r.grpo.steps} steps, max policy lag ${r.grpo.maxPolicyLag}, reward ` +
      `${num(r.grpo.rewardFirst5Mean)} (first 5) -> ${num(r.grpo.rewardLast5Mean)} (last 5), ` +
      `KL max ${sci(r.grpo.klMax)}` +
      (r.grpo.maxPolicyLag > 0 ? ` (fresh rollouts: ${sci(r.grpo.klFreshMax)})` : '') +
      `, grad norm median ${num(r.grpo.gradNormMedian)}`,
    `  eval           ${r.eval.examples ?? 'n/a'} questions per budget, at <= ${sizes.eval.maxToolCalls} tool calls, ` +
      `temperature ${sizes.eval.temperature}`,
    `    ${''.padEnd(14)} ${'accuracy'.padStart(8)} ${'tool calls'.padStart(11)} ${'tool calls (tool-free)'.padStart(22)}`,
    evalRow('before (SFT)', r.eval.before),
    evalRow('control', r.eval.control),
    evalRow('after (GRPO)', r.eval.after),
    ...comparisonLines(r),
    ...(r.eval.curve
      ? [
          `    accuracy by tool budget b (SFT / control / GRPO): ${r.eval.curve
            .map((p) => `b=${p.budget} ${num(p.before, 2)}/${num(p.control, 2)}/${num(p.after, 2)}`)
            .join(', ')}`,
        ]
      : []),
    ...(r.eval.chart
      ? [
          `    chart: ${path.join(path.dirname(report), r.eval.chart)} (accuracy vs budget, vs cost)`,
        ]
      : []),
    guardrailLine(r),
    '  targets',
    ...targets.map((t) => `    ${t.met ? '[met]    ' : '[not met]'} ${t.name}: ${t.detail}`),
    '',
    'Watch runs like these in Prometheus and Grafana (docs/observability.md):',
    '  docker compose up -d --build',
    '  npx anneal demo --url http://127.0.0.1:8080 --token anneal-local-dev-token',
    '  then open http://127.0.0.1:3000 -> Dashboards -> Anneal / Run and pick the run_id.',
    `Step history of any run: GET /v1/runs/{id}/metrics (this demo: ${r.runs.grpo}).`,
  ];
}

export function printSummary(
  display: DemoDisplay,
  input: Parameters<typeof summaryLines>[0],
): void {
  for (const line of summaryLines(input)) display.info(line);
}
