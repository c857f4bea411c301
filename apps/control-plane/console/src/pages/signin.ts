// The sign-in form: a bearer token typed in (or pasted), checked against GET /v1/runs, then kept
// in sessionStorage for this tab only. The form is never submitted anywhere (CSP form-action
// 'none'): the token leaves the page only as an Authorization header.
import { checkResponse } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { signIn } from '../session.ts';

export function renderSignIn(main: HTMLElement, notice?: string): void {
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    placeholder: 'Bearer token',
  });
  const status = h('div', { class: 'status' }, notice ? h('p', { class: 'notice' }, notice) : null);
  const form = h(
    'form',
    { class: 'signin', 'aria-label': 'Sign in' },
    h('h1', {}, 'Sign in'),
    h(
      'p',
      {},
      'Paste an API token (the same bearer token the CLI uses). It is kept in this tab only ' +
        'and sent as an Authorization header.',
    ),
    h('label', { for: 'token' }, 'Token'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
    status,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    try {
      const res = await fetch('/v1/runs?limit=1', {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      });
      // Not checkResponse's 401 handling: that signs the tab out, and nobody is signed in yet.
      if (res.status === 401) throw new Error('This token is not accepted.');
      await checkResponse(res);
    } catch (error) {
      fill(status, errorLine(error));
      return;
    }
    signIn(token);
    input.value = '';
    window.location.hash = '#/runs';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  });
  fill(main, form);
  input.focus();
}
