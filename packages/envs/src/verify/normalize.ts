// Answer normalisation for exact-match verification: case, accents, punctuation, articles,
// whitespace and numbers ("Five", "5", "5.0" and "5,000" vs "5000" compare equal).

const ARTICLES = new Set(['a', 'an', 'the']);

const UNITS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
};
const TENS: Record<string, number> = {
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
};

/** Canonical decimal text of a numeric token: "05" -> "5", "5.50" -> "5.5", "-0" -> "0". */
function canonicalNumber(text: string): string {
  const value = Number(text);
  return Number.isFinite(value) ? String(value === 0 ? 0 : value) : text;
}

/** Replace spelled-out numbers below 100 ("twenty one", "seven") by digits. */
function numberWords(tokens: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    const tens = TENS[token];
    const next = tokens[i + 1];
    const unit = next === undefined ? undefined : UNITS[next];
    if (tens !== undefined && unit !== undefined && unit > 0 && unit < 10) {
      out.push(String(tens + unit));
      i++;
    } else if (tens !== undefined) {
      out.push(String(tens));
    } else if (UNITS[token] !== undefined) {
      out.push(String(UNITS[token]));
    } else {
      out.push(token);
    }
  }
  return out;
}

export function normalizeAnswer(text: string): string {
  const folded = text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '') // accents
    .toLowerCase()
    .replace(/(\d),(?=\d{3}\b)/g, '$1'); // thousands separators
  const tokens = folded.match(/-?\d+(?:\.\d+)?|[\p{L}\p{N}]+/gu) ?? [];
  const words = tokens
    .filter((t) => !ARTICLES.has(t))
    .map((t) => (/^-?\d/.test(t) ? canonicalNumber(t) : t));
  return numberWords(words).join(' ');
}
