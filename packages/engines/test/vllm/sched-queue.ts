// The fake vLLM's request scheduler: at most `max_num_seqs` sequences running, the rest waiting,
// in the order vLLM's v1 scheduler takes them from its waiting queue.
// - vllm/v1/core/sched/request_queue.py@0097c7ed: `FCFSRequestQueue` (a deque, arrival order)
//   for `--scheduling-policy fcfs` (the default), `PriorityRequestQueue` (a heap) for `priority`;
// - vllm/v1/request.py@dba83d52 `Request.__lt__`: the heap orders by (priority, arrival_time,
//   request_id): a lower `priority` value runs first, ties go to the earlier arrival;
// - vllm/v1/core/sched/scheduler.py@b4622cf9 `schedule`: waiting requests join `running` while
//   `len(self.running) < max_num_running_reqs` (`--max-num-seqs`); a full batch does not preempt
//   a running request for a waiting one of higher priority (preemption happens only when KV
//   blocks run out, not modelled here);
// - parallel sampling (`n` > 1, vllm/v1/engine/parallel_sampling.py) adds each of the `n` child
//   requests to the scheduler with the request's priority and arrival time, so a completion
//   holds one seat per choice. Here a completion's children are seated as one unit once `n`
//   seats are free (its generation starts when all of them run);
// - under `fcfs` a non-zero `priority` is accepted and ignored: the v1 engine checks it nowhere
//   (vllm/v1/engine/input_processor.py@009daaee `process_inputs` passes it through), although
//   the field's description in vllm/entrypoints/openai/completion/protocol.py@002032ee says it
//   "will raise an error".

export type SchedulingPolicy = 'fcfs' | 'priority';

interface Waiting {
  n: number;
  priority: number;
  arrival: number;
  admit: () => void;
}

export class FakeScheduler {
  private running = 0;
  private arrivals = 0;
  private readonly waiting: Waiting[] = [];
  private peak = 0;
  /** Arrival number (0, 1, …) of each completion, in the order it started running. */
  readonly started: number[] = [];

  constructor(
    readonly maxNumSeqs: number,
    readonly policy: SchedulingPolicy,
  ) {}

  get runningSeqs(): number {
    return this.running;
  }

  get waitingRequests(): number {
    return this.waiting.length;
  }

  get peakRunning(): number {
    return this.peak;
  }

  /** Resolves once the completion's `n` sequences run; the returned function frees them. */
  async admit(n: number, priority: number): Promise<() => void> {
    const arrival = this.arrivals++;
    await new Promise<void>((admit) => {
      this.waiting.push({ n: Math.min(n, this.maxNumSeqs), priority, arrival, admit });
      this.schedule();
    });
    const seats = Math.min(n, this.maxNumSeqs);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.running -= seats;
      this.schedule();
    };
  }

  /** Seats waiting completions in queue order while the head fits (vLLM stops at the head). */
  private schedule(): void {
    for (;;) {
      const head = this.peekHead();
      if (head === undefined || this.running + head.n > this.maxNumSeqs) return;
      this.waiting.splice(this.waiting.indexOf(head), 1);
      this.running += head.n;
      this.peak = Math.max(this.peak, this.running);
      this.started.push(head.arrival);
      head.admit();
    }
  }

  private peekHead(): Waiting | undefined {
    if (this.policy === 'fcfs') return this.waiting[0];
    let best: Waiting | undefined;
    for (const w of this.waiting) {
      if (
        best === undefined ||
        w.priority < best.priority ||
        (w.priority === best.priority && w.arrival < best.arrival)
      ) {
        best = w;
      }
    }
    return best;
  }
}
