// A small language detector for rubrics such as "response is in English" (docs/recipe.md §3):
// scripts decide CJK/Hangul/Cyrillic/Arabic/Greek text; stopword hits decide among Latin-script
// languages. 'und' (undetermined) when there is no evidence, e.g. a single name or number.

export type LanguageCode =
  'en' | 'nl' | 'de' | 'fr' | 'es' | 'id' | 'ko' | 'ja' | 'zh' | 'ru' | 'ar' | 'el' | 'und';

const STOPWORDS: Record<string, readonly string[]> = {
  en: [
    'the',
    'and',
    'is',
    'are',
    'was',
    'of',
    'to',
    'in',
    'it',
    'that',
    'this',
    'with',
    'for',
    'you',
    'not',
    'on',
    'be',
    'have',
    'has',
    'yes',
    'no',
    'what',
    'which',
    'who',
    'i',
    'my',
    'we',
    'they',
    'he',
    'she',
    'at',
    'from',
    'or',
    'but',
    'hello',
    'hi',
    'thanks',
    'please',
  ],
  nl: [
    'de',
    'het',
    'een',
    'en',
    'is',
    'van',
    'dat',
    'niet',
    'zijn',
    'op',
    'met',
    'voor',
    'ik',
    'je',
    'wij',
    'ze',
    'hij',
    'maar',
    'ja',
    'nee',
    'wat',
    'welke',
    'wie',
    'dit',
    'deze',
    'er',
    'naar',
    'hallo',
    'bedankt',
  ],
  de: [
    'der',
    'die',
    'das',
    'und',
    'ist',
    'nicht',
    'ein',
    'eine',
    'zu',
    'mit',
    'von',
    'ich',
    'du',
    'wir',
    'sie',
    'er',
    'auf',
    'für',
    'aber',
    'ja',
    'nein',
    'was',
    'welche',
    'wer',
    'dies',
    'auch',
    'hallo',
    'danke',
  ],
  fr: [
    'le',
    'la',
    'les',
    'et',
    'est',
    'un',
    'une',
    'des',
    'du',
    'de',
    'que',
    'qui',
    'pas',
    'je',
    'tu',
    'nous',
    'vous',
    'il',
    'elle',
    'avec',
    'pour',
    'dans',
    'sur',
    'mais',
    'oui',
    'non',
    'bonjour',
    'merci',
    'ce',
    'cette',
  ],
  es: [
    'el',
    'la',
    'los',
    'las',
    'y',
    'es',
    'un',
    'una',
    'de',
    'que',
    'no',
    'en',
    'con',
    'por',
    'para',
    'yo',
    'tu',
    'nosotros',
    'pero',
    'si',
    'sí',
    'qué',
    'cual',
    'quién',
    'esto',
    'esta',
    'hola',
    'gracias',
    'del',
    'al',
  ],
  id: [
    'dan',
    'yang',
    'di',
    'ke',
    'dari',
    'ini',
    'itu',
    'tidak',
    'adalah',
    'dengan',
    'untuk',
    'saya',
    'kamu',
    'kami',
    'mereka',
    'dia',
    'tetapi',
    'ya',
    'apa',
    'siapa',
    'ada',
    'akan',
    'juga',
    'halo',
    'terima',
    'kasih',
  ],
};

const SCRIPTS: ReadonlyArray<[LanguageCode, RegExp]> = [
  ['ko', /\p{Script=Hangul}/gu],
  ['ja', /[\p{Script=Hiragana}\p{Script=Katakana}]/gu],
  ['zh', /\p{Script=Han}/gu],
  ['ru', /\p{Script=Cyrillic}/gu],
  ['ar', /\p{Script=Arabic}/gu],
  ['el', /\p{Script=Greek}/gu],
];

const STOPWORD_SETS = Object.entries(STOPWORDS).map(
  ([code, words]) => [code as LanguageCode, new Set(words)] as const,
);

export interface LanguageGuess {
  language: LanguageCode;
  /** Share of the evidence (script characters or stopword hits) for the winner, 0..1. */
  confidence: number;
}

function byScript(text: string, latinLetters: number): LanguageGuess | undefined {
  const counts = SCRIPTS.map(([code, re]) => [code, text.match(re)?.length ?? 0] as const);
  const kana = counts.find(([code]) => code === 'ja')?.[1] ?? 0;
  const total = counts.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0 || total < latinLetters) return undefined;
  // Japanese mixes Han with kana: any kana makes Han characters count as Japanese.
  const scored = counts.map(([code, n]) =>
    code === 'ja' && kana > 0
      ? ([code, n + (counts.find(([c]) => c === 'zh')?.[1] ?? 0)] as const)
      : ([code, n] as const),
  );
  const [best, n] = scored.reduce((a, b) => (b[1] > a[1] ? b : a));
  return { language: best, confidence: Math.min(1, n / total) };
}

export function detectLanguage(text: string): LanguageGuess {
  const latinLetters = text.match(/\p{Script=Latin}/gu)?.length ?? 0;
  const script = byScript(text, latinLetters);
  if (script) return script;
  const words = text.toLowerCase().match(/[\p{L}']+/gu) ?? [];
  const hits = STOPWORD_SETS.map(
    ([code, set]) => [code, words.filter((w) => set.has(w)).length] as const,
  );
  const total = hits.reduce((sum, [, n]) => sum + n, 0);
  const sorted = [...hits].sort((a, b) => b[1] - a[1]);
  const [first, second] = sorted as [
    readonly [LanguageCode, number],
    readonly [LanguageCode, number],
  ];
  if (first[1] === 0 || first[1] === second[1]) return { language: 'und', confidence: 0 };
  return { language: first[0], confidence: first[1] / total };
}
