// Bounds on user documents (run specs, operator configs) so that parsing costs time linear in the
// text and never more than a few milliseconds per KiB: a document is first scanned without
// parsing (entry count, bracket depth), then its parse tree is walked once (entries, depth,
// aliases, duplicate and `__proto__` keys) before anything converts or validates it. Beyond the
// limits the caller gets one issue saying which limit, never a parse that blocks the event loop.
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';
import type { Issue } from './issue.ts';

export interface DocumentLimits {
  /** Mapping entries plus sequence items, over the whole document. */
  maxEntries: number;
  /** Nesting depth of mappings and sequences. */
  maxDepth: number;
  /** YAML aliases (`*name`); each may expand to a whole subtree. */
  maxAliases: number;
}

/** Far above any real run spec or operator config (the largest have a few hundred entries). */
export const DOCUMENT_LIMITS: Readonly<DocumentLimits> = {
  maxEntries: 10_000,
  maxDepth: 64,
  maxAliases: 100,
};

const FORBIDDEN_KEYS = new Set(['__proto__']);

const tooMany = (limits: DocumentLimits): Issue => ({
  path: '',
  message: `document has more than ${limits.maxEntries} entries`,
});
const tooDeep = (limits: DocumentLimits): Issue => ({
  path: '',
  message: `document nests deeper than ${limits.maxDepth} levels`,
});

/**
 * One pass over the raw text, before any parser sees it: counts what can start an entry
 * (`key:` indicators, `,` and `- ` outside quotes) and the bracket depth of flow collections.
 * The count over-estimates entries (a `: ` inside a block scalar counts), so its limit is four
 * times `maxEntries`: a real document never comes near it, a hostile one is refused unparsed.
 */
export function scanText(
  text: string,
  limits: DocumentLimits = DOCUMENT_LIMITS,
): Issue | undefined {
  let entries = 0;
  let depth = 0;
  let quote = 0; // 0, or the char code of the open quote
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quote !== 0) {
      if (c === 92 /* \ */ && quote === 34) i++;
      else if (c === quote) quote = 0;
      continue;
    }
    if (c === 34 /* " */ || c === 39 /* ' */) quote = c;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > limits.maxDepth) return tooDeep(limits);
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth = Math.max(0, depth - 1);
    else if (c === 44 /* , */) entries++;
    else if (c === 58 /* : */ || c === 45 /* - */) {
      const next = text.charCodeAt(i + 1);
      if (Number.isNaN(next) || next === 32 || next === 10 || next === 13 || next === 9) entries++;
    }
    if (entries > limits.maxEntries * 4) return tooMany(limits);
  }
  return undefined;
}

const keyText = (key: unknown): string =>
  isScalar(key) ? String(key.value) : key === null ? '' : String(key);

/**
 * Walks a parsed YAML document once (iteratively: depth is bounded by the walk, not by the call
 * stack): entries, depth and aliases against `limits`, duplicate keys in a mapping, keys that
 * could reach an object's prototype, keys that are collections or aliases, and aliases without
 * an anchor. Returns the first problems.
 */
export function treeIssues(
  doc: Document,
  limits: DocumentLimits = DOCUMENT_LIMITS,
  pointerOf: (path: ReadonlyArray<string | number>) => string,
  lineAt: (node: unknown) => number | undefined = () => undefined,
): Issue[] {
  const issues: Issue[] = [];
  const at = (path: Array<string | number>, message: string, node: unknown): void => {
    const line = lineAt(node);
    issues.push({ path: pointerOf(path), message, ...(line !== undefined && { line }) });
  };
  let entries = 0;
  let aliases = 0;
  const stack: Array<{ node: unknown; depth: number; path: Array<string | number> }> = [
    { node: doc.contents, depth: 0, path: [] },
  ];
  while (stack.length > 0 && issues.length < 10) {
    const { node, depth, path } = stack.pop()!;
    if (isAlias(node)) {
      if (++aliases > limits.maxAliases) {
        return [{ path: '', message: `document has more than ${limits.maxAliases} aliases` }];
      }
      if (node.resolve(doc) === undefined) {
        at(path, `alias *${node.source} has no anchor`, node);
      }
      continue;
    }
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth + 1 > limits.maxDepth) return [tooDeep(limits)];
    entries += node.items.length;
    if (entries > limits.maxEntries) return [tooMany(limits)];
    if (isSeq(node)) {
      node.items.forEach((item, index) =>
        stack.push({ node: item, depth: depth + 1, path: [...path, index] }),
      );
      continue;
    }
    const seen = new Set<string>();
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      const key = keyText(pair.key);
      // `? [a, b] : c`: converting such a key stringifies it, and the yaml library reports that
      // with a process warning (stderr) per document, which any client could trigger at will.
      if (isMap(pair.key) || isSeq(pair.key) || isAlias(pair.key))
        at([...path, key], 'a key must be a plain scalar, not a collection or alias', pair.key);
      else if (FORBIDDEN_KEYS.has(key)) at([...path, key], `key '${key}' is not allowed`, pair.key);
      else if (seen.has(key)) at([...path, key], `duplicate key '${key}'`, pair.key);
      seen.add(key);
      stack.push({ node: pair.value as Node | null, depth: depth + 1, path: [...path, key] });
    }
  }
  return issues;
}

/**
 * The same checks on an already-parsed JSON value (JSON.parse is linear and native; the
 * value is walked once, iteratively, before validation clones or recurses into it).
 */
export function valueIssues(
  value: unknown,
  limits: DocumentLimits = DOCUMENT_LIMITS,
  pointerOf: (path: ReadonlyArray<string | number>) => string,
): Issue[] {
  const issues: Issue[] = [];
  let entries = 0;
  const stack: Array<{ node: unknown; depth: number; path: Array<string | number> }> = [
    { node: value, depth: 0, path: [] },
  ];
  while (stack.length > 0 && issues.length < 10) {
    const { node, depth, path } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth + 1 > limits.maxDepth) return [tooDeep(limits)];
    if (Array.isArray(node)) {
      entries += node.length;
      if (entries > limits.maxEntries) return [tooMany(limits)];
      node.forEach((item, index) =>
        stack.push({ node: item, depth: depth + 1, path: [...path, index] }),
      );
      continue;
    }
    const keys = Object.keys(node);
    entries += keys.length;
    if (entries > limits.maxEntries) return [tooMany(limits)];
    for (const key of keys) {
      if (FORBIDDEN_KEYS.has(key)) {
        issues.push({ path: pointerOf([...path, key]), message: `key '${key}' is not allowed` });
        continue;
      }
      stack.push({
        node: (node as Record<string, unknown>)[key],
        depth: depth + 1,
        path: [...path, key],
      });
    }
  }
  return issues;
}
