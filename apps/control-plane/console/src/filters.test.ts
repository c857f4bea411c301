// The API query a filter form sends: the hash's values for the form's own fields (and the
// extra names a page passes), never an empty value or a parameter of another page.
import { describe, expect, it } from 'vitest';
import { type Field, apiQuery } from './filters.ts';

const FIELDS: Field[] = [
  { name: 'step', label: 'Step', kind: 'number' },
  { name: 'q', label: 'Text', kind: 'text' },
  {
    name: 'role',
    label: 'Role',
    kind: 'select',
    options: [
      ['', 'any'],
      ['policy', 'policy'],
    ],
  },
];

describe('apiQuery', () => {
  it("takes the hash's values for the form's fields and the extra names only", () => {
    const query = new URLSearchParams('step=3&q=tool+error&token=secret&sort=reward&prompt=p1');
    expect(apiQuery(FIELDS, query, ['sort'])).toEqual({
      step: '3',
      q: 'tool error',
      sort: 'reward',
    });
  });

  it('drops empty values, so "any" in a select sends nothing', () => {
    expect(apiQuery(FIELDS, new URLSearchParams('step=&role=&q=x'))).toEqual({ q: 'x' });
    expect(apiQuery(FIELDS, new URLSearchParams(''))).toEqual({});
  });
});
