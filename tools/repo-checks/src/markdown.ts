// The parts of a Markdown file that references point at: headings (with their section numbers and
// the text under them) and link anchors. Fenced code blocks are skipped, as a renderer would.

export interface Heading {
  /** 1 for `#`, 2 for `##`, … */
  level: number;
  /** Heading text without the leading `#`s, emphasis or code backticks. */
  text: string;
  /** Leading section number (`2` for `## 2. GRPO`, `1.1` for `### 1.1 SFT`), if any. */
  number?: string;
  /** Heading text without its section number. */
  title: string;
  /** 0-based line index of the heading. */
  line: number;
}

export interface MarkdownDoc {
  headings: Heading[];
  lines: string[];
  /** GitHub heading slugs and explicit `<a id="…">` / `<a name="…">` anchors. */
  anchors: Set<string>;
}

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE = /^\s*(```|~~~)/;
const SECTION_NUMBER = /^(\d+(?:\.\d+)*)\.?\s+(.*)$/;
const EXPLICIT_ANCHOR = /<a\s+(?:id|name)="([^"]+)"/g;

/** Heading or link text with Markdown emphasis and code marks removed. */
export function plainText(text: string): string {
  return text.replace(/[*`]/g, '').replace(/\s+/g, ' ').trim();
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function githubSlug(text: string): string {
  return plainText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Lines outside fenced code blocks (fenced lines become empty, so line numbers stay). */
export function withoutFencedCode(lines: readonly string[]): string[] {
  let fenced = false;
  return lines.map((line) => {
    if (FENCE.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

export function parseMarkdown(source: string): MarkdownDoc {
  const lines = source.split('\n');
  const headings: Heading[] = [];
  const anchors = new Set<string>();
  const slugCounts = new Map<string, number>();
  withoutFencedCode(lines).forEach((line, index) => {
    for (const match of line.matchAll(EXPLICIT_ANCHOR)) anchors.add(match[1]!);
    const heading = HEADING.exec(line);
    if (!heading) return;
    const text = plainText(heading[2]!);
    const numbered = SECTION_NUMBER.exec(text);
    headings.push({
      level: heading[1]!.length,
      text,
      title: numbered ? numbered[2]! : text,
      line: index,
      ...(numbered ? { number: numbered[1]! } : {}),
    });
    // GitHub suffixes repeated slugs with -1, -2, …
    const slug = githubSlug(text);
    const seen = slugCounts.get(slug) ?? 0;
    slugCounts.set(slug, seen + 1);
    anchors.add(seen === 0 ? slug : `${slug}-${seen}`);
  });
  return { headings, lines, anchors };
}

/** The heading numbered `number` (e.g. `2` or `1.1`), if the document has one. */
export function numberedHeading(doc: MarkdownDoc, number: string): Heading | undefined {
  return doc.headings.find((h) => h.number === number);
}

/** A heading whose title is `title`, compared case-insensitively, without its section number and
 * without a trailing parenthetical (`## Tuning (why these numbers)` is "Tuning"). */
export function titledHeading(doc: MarkdownDoc, title: string): Heading | undefined {
  const wanted = plainText(title).toLowerCase();
  const names = (h: Heading) => [h.text, h.title, h.title.replace(/\s*\([^)]*\)$/, '')];
  return doc.headings.find((h) => names(h).some((name) => name.toLowerCase() === wanted));
}

/** The text under a heading, up to the next heading of the same or a higher level. */
export function sectionText(doc: MarkdownDoc, heading: Heading): string {
  const next = doc.headings.find((h) => h.line > heading.line && h.level <= heading.level);
  return doc.lines.slice(heading.line, next ? next.line : doc.lines.length).join('\n');
}
