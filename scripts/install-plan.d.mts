// Types of scripts/install-plan.mjs for the TypeScript tests that drive it.
export interface System {
  platform: string;
  manager: 'apt' | 'brew' | null;
  root: boolean;
  sudo: boolean;
}
export interface Step {
  argv: string[];
  why: string;
}
export type Plan =
  | { action: 'none' }
  | { action: 'report'; reason: string; cannot: { id: string; why: string }[] }
  | { action: 'install'; manager: 'apt' | 'brew'; as: string; ask: boolean; steps: Step[] };
export interface Missing {
  id: string;
  what: string;
  how: string;
}
export function packageManagerFor(
  platform: string,
  hasCommand: (name: string) => boolean,
): 'apt' | 'brew' | null;
export function planInstall(
  missing: readonly { id: string }[],
  system: System,
  options: { noInstall: boolean; interactive: boolean; env: Record<string, string | undefined> },
): Plan;
export function shellLine(argv: readonly string[]): string;
export function describeMissing(task: string, missing: readonly Missing[], reason?: string): string;
export function describePlan(task: string, missing: readonly Missing[], plan: Plan): string;
