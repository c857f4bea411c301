// The console's entry: picks the page for the hash route, and the sign-in form while this tab
// holds no token. Each page gets an AbortSignal that ends its requests and event streams when
// the user navigates away.
import { SIGNED_OUT } from './api.ts';
import { errorLine, fill, h } from './dom.ts';
import { renderCompare } from './pages/compare.ts';
import { renderItems } from './pages/items.ts';
import { renderRollouts } from './pages/rollouts.ts';
import { renderRun } from './pages/run.ts';
import { renderRuns } from './pages/runs.ts';
import { renderSignIn } from './pages/signin.ts';
import { renderSweep } from './pages/sweep.ts';
import { parseRoute, runHref } from './router.ts';
import { currentToken, signOut } from './session.ts';

const main = document.getElementById('app')!;
const crumbs = document.getElementById('crumbs')!;
const signOutButton = document.getElementById('sign-out') as HTMLButtonElement;
let current: AbortController | undefined;

function breadcrumbs(parts: [string, string | undefined][]): void {
  fill(
    crumbs,
    ...parts.flatMap(([text, href], i) => [
      i > 0 ? ' / ' : null,
      href ? h('a', { href }, text) : h('span', {}, text),
    ]),
  );
}

async function show(notice?: string): Promise<void> {
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const signedIn = currentToken() !== null;
  signOutButton.hidden = !signedIn;
  if (!signedIn) {
    breadcrumbs([]);
    renderSignIn(main, notice);
    return;
  }
  try {
    // Inside the try: a malformed link is an error on the page, not a blank one.
    const route = parseRoute(window.location.hash);
    switch (route.page) {
      case 'runs':
        breadcrumbs([['Runs', undefined]]);
        await renderRuns(main, route.query, controller.signal);
        break;
      case 'run':
        breadcrumbs([
          ['Runs', '#/runs'],
          [route.id, undefined],
        ]);
        await renderRun(main, route.id, controller.signal);
        break;
      case 'rollouts':
        breadcrumbs([
          ['Runs', '#/runs'],
          [route.id, runHref(route.id)],
          ['Rollouts', undefined],
        ]);
        await renderRollouts(main, route.id, route.query, controller.signal);
        break;
      case 'items':
        breadcrumbs([
          ['Runs', '#/runs'],
          [route.id, runHref(route.id)],
          ['Answers', undefined],
        ]);
        await renderItems(main, route.id, route.query, controller.signal);
        break;
      case 'compare':
        breadcrumbs([
          ['Runs', '#/runs'],
          ['Compare', undefined],
        ]);
        await renderCompare(main, route.runs, controller.signal);
        break;
      case 'sweep':
        breadcrumbs([
          ['Runs', '#/runs'],
          [`Sweep ${route.id}`, undefined],
        ]);
        await renderSweep(main, route.id, controller.signal);
        break;
    }
  } catch (error) {
    if (controller.signal.aborted) return;
    breadcrumbs([['Runs', '#/runs']]);
    fill(main, errorLine(error));
  }
}

window.addEventListener('hashchange', () => void show());
window.addEventListener(SIGNED_OUT, (event) => {
  void show(`Signed out: ${(event as CustomEvent<string>).detail}`);
});
signOutButton.addEventListener('click', () => {
  signOut();
  void show('Signed out.');
});
void show();
