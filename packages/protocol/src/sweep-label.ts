// The label every run of a sweep carries (import-free, so the console can read it without the
// sweep schema).

/** The label every run of a sweep carries, its value the sweep's id. */
export const SWEEP_LABEL = 'sweep';
