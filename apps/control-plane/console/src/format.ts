// How numbers and times read on the pages.

import type { FleetShare } from '@anneal/protocol';

/** 3 significant digits; tiny and huge magnitudes in exponent form (a KL of 4.3e-13). */
export function num(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs >= 1e6 || abs < 1e-3) return value.toExponential(2);
  if (Number.isInteger(value)) return String(value);
  return String(Number(value.toPrecision(3)));
}

/** "2026-12-02 01:23:45" in the browser's time zone. */
export function when(iso: string | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** "3 min ago", "2 h ago": how long before now. */
export function ago(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}

/** "1 h 05 min", "42 s": a span between two times (or until now). */
export function span(fromIso: string | undefined, toIso?: string): string {
  if (!fromIso) return '–';
  const seconds = Math.round(
    ((toIso ? Date.parse(toIso) : Date.now()) - Date.parse(fromIso)) / 1000,
  );
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${String(seconds % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** A run's share of an inference endpoint it shares by weight (RunResource.fleetShare):
 * "42.9 % of the tokens (weight 3; 2 requests, 600 tokens, waited 0.2 s)". */
export function fleetShareText(share: FleetShare): string {
  const percent = (share.tokenShare * 100).toFixed(1);
  return (
    `${percent} % of the tokens (weight ${num(share.weight)}; ${share.requests} ` +
    `request${share.requests === 1 ? '' : 's'}, ` +
    `${share.tokens} tokens, waited ${num(share.waitedSeconds)} s)`
  );
}
