// Filter forms whose values live in the hash route (`#/runs/{id}/rollouts?step=3&sort=reward`):
// a filtered view can be reloaded, bookmarked and sent to someone (it holds no token).
import { h } from './dom.ts';
import { hrefWith } from './router.ts';

export type Field =
  | { name: string; label: string; kind: 'number'; step?: string; min?: number }
  | { name: string; label: string; kind: 'text'; placeholder?: string }
  | {
      name: string;
      label: string;
      kind: 'select';
      options: readonly (readonly [string, string])[];
    };

/** A form of `fields` filled from `query`; submitting navigates to `base` with its values. */
export function filterForm(
  base: string,
  fields: readonly Field[],
  query: URLSearchParams,
  keep: Record<string, string> = {},
): HTMLFormElement {
  const controls = fields.map((field) => {
    const id = `f-${field.name}`;
    const value = query.get(field.name) ?? '';
    const control =
      field.kind === 'select'
        ? h(
            'select',
            { id, name: field.name },
            ...field.options.map(([v, text]) =>
              h('option', { value: v, ...(v === value && { selected: true }) }, text),
            ),
          )
        : h('input', {
            id,
            name: field.name,
            value,
            type: field.kind === 'number' ? 'number' : 'search',
            ...(field.kind === 'number' && { step: field.step ?? '1', min: field.min }),
            ...(field.kind === 'text' && { placeholder: field.placeholder }),
          });
    return h('label', { class: 'field' }, h('span', {}, field.label), control);
  });
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filters' },
    ...controls,
    h('button', { type: 'submit' }, 'Apply'),
    h('a', { href: hrefWith(base, keep), class: 'reset' }, 'Reset'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const values: Record<string, string> = { ...keep };
    for (const [key, value] of new FormData(form)) values[key] = String(value).trim();
    window.location.hash = hrefWith(base, values);
  });
  return form;
}

/** The API query of a form's fields: the hash's values for those names, nothing else. */
export function apiQuery(fields: readonly Field[], query: URLSearchParams, extra: string[] = []) {
  const out: Record<string, string | undefined> = {};
  for (const name of [...fields.map((f) => f.name), ...extra]) {
    const value = query.get(name);
    if (value !== null && value !== '') out[name] = value;
  }
  return out;
}
