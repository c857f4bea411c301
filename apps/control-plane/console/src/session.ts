// The bearer token lives in sessionStorage only: gone when the tab closes, never in a URL, a
// cookie or localStorage (docs/console.md "Sign-in and tokens").
const KEY = 'anneal.token';

export function currentToken(): string | null {
  return sessionStorage.getItem(KEY);
}

export function signIn(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
}
