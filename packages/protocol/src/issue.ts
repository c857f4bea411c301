// What every parser and validator of user documents reports: issues with JSON pointers and lines.

/** One problem with an input document: JSON pointer of the field, message, and source line. */
export interface Issue {
  /** JSON pointer (RFC 6901) of the offending field, `''` for the whole document. */
  path: string;
  message: string;
  /** 1-based line in the source text, when known. */
  line?: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; errors: Issue[] };
