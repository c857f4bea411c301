// Items of the built-in tasks.
import type { Rubric } from '../rubrics/types.ts';
import type { SftTurn } from '../data/schemas.ts';
import type { Chain } from './chains.ts';

export type QaKind = 'multi_hop' | 'arithmetic' | 'stated_fact';

export interface TaskQa {
  id: string;
  kind: QaKind;
  question: string;
  answer: string;
  aliases?: string[];
  /** Search hops the question needs (0 for tool-free questions). */
  hops: number;
  needsSearch: boolean;
  chain?: Chain;
}

export interface TaskRubricPrompt {
  id: string;
  prompt: string;
  rubrics: Rubric[];
  reference: string;
}

/** A prompt of the GRPO mix; `prompt` is the user text either way. */
export type TaskPrompt =
  | { kind: 'qa'; id: string; prompt: string; qa: TaskQa }
  | { kind: 'rubric'; id: string; prompt: string; rubric: TaskRubricPrompt };

/** An SFT demonstration in the production tool-call format. */
export interface SftDemo {
  source: 'qa' | 'tool_free' | 'rubric';
  promptId: string;
  prompt: string;
  turns: SftTurn[];
  /** The whole sequence as text (markers included). */
  text: string;
  tokens: number[];
  lossMask: number[];
  promptLength: number;
  /** A search on a question that needs none (RL has this efficiency to gain). */
  redundantCall: boolean;
}

/** Why the rejected response of a preference pair is worse. */
export type PreferenceFlaw = 'verbose' | 'repeated' | 'no_answer_marker' | 'trailing_noise';

export interface TaskPreferencePair {
  promptId: string;
  prompt: string;
  chosen: string;
  rejected: string;
  flaw: PreferenceFlaw;
  /** Token form: prompt via the format, responses encoded as written. */
  tokens: { prompt: number[]; chosen: number[]; rejected: number[] };
}
