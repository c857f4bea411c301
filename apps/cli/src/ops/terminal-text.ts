// The one sanitiser of server text the CLI prints (reasons, names, labels, notices, errors, rollout
// text): anything a terminal would act on instead of show — C0 controls (ESC starting CSI/OSC
// sequences such as a window title or a clear screen, BEL, CR, LF), DEL, C1 controls (U+0080–9F,
// CSI/OSC on their own) and bidirectional overrides and isolates (U+202A–E, U+2066–9, and the
// marks U+200E/F and U+061C), which reorder what a reader sees — becomes visible escape text
// (`\x1b`, `\n`, `\u202e`), never silently dropped. JSON output keeps every character but writes
// those as JSON escapes, so it stays the same data and is still safe to cat. docs/security.md.

// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// What JSON.stringify leaves raw of the above (it escapes U+0000–001F itself), plus the line
// and paragraph separators some terminals and editors break lines on.
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (char: string, width: number) => char.charCodeAt(0).toString(16).padStart(width, '0');

function escape(char: string): string {
  const code = char.charCodeAt(0);
  return NAMED[char] ?? (code <= 0x9f ? `\\x${hex(char, 2)}` : `\\u${hex(char, 4)}`);
}

/** `text` with every control and bidi character replaced by visible escape text. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escape);
}

/** `terminalSafe` of each argument, for one-off interpolations. */
export const safe = (value: string | number | null | undefined): string =>
  terminalSafe(String(value ?? ''));

/** JSON.stringify that writes the characters a terminal would act on as \uXXXX escapes. */
export function safeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    UNSAFE_IN_JSON,
    (char) => `\\u${hex(char, 4)}`,
  );
}

/** Every line of `text` made terminal-safe; the line breaks between them kept. */
export function terminalLines(text: string): string {
  return text.split('\n').map(terminalSafe).join('\n');
}

/** What the commands print to stdout and stderr: each line through the sanitiser. */
export const writeOut = (text: string): boolean => process.stdout.write(terminalLines(text));
export const writeErr = (text: string): boolean => process.stderr.write(terminalLines(text));
