import { describe, expect, it } from 'vitest';
import { LocalCorpusBackend } from './localCorpus.ts';

describe('LocalCorpusBackend (BM25)', () => {
  const corpus = new LocalCorpusBackend('demo', [
    { id: 'vek', title: 'Vek', text: "Vek lives in Oru. Vek's pal is Tam." },
    { id: 'tam', title: 'Tam', text: "Tam lives in Pel. Tam's pal is Vek." },
    { id: 'oru', title: 'Oru', text: 'Oru is in Talm.' },
  ]);

  it('ranks the entity page first for its name', async () => {
    const hits = await corpus.search('Vek', 10);
    expect(hits.map((h) => h.title)).toEqual(['Vek', 'Tam']);
    expect(hits[0]).toEqual({
      title: 'Vek',
      url: 'local://vek',
      snippet: "Vek lives in Oru. Vek's pal is Tam.",
    });
  });

  it('honours the limit and returns nothing for unknown terms', async () => {
    expect(await corpus.search('Vek', 1)).toHaveLength(1);
    expect(await corpus.search('2+3', 5)).toEqual([]);
    expect(corpus.size).toBe(3);
  });

  it('rejects duplicate ids', () => {
    expect(
      () =>
        new LocalCorpusBackend('x', [
          { id: 'a', title: 'a', text: 'a' },
          { id: 'a', title: 'b', text: 'b' },
        ]),
    ).toThrow(/duplicate document id 'a'/);
  });
});
