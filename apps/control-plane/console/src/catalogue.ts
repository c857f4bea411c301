// /console/catalogue.json: run states and kinds, and the step-curve panels, from the server's
// own tables (apps/control-plane/src/services/console-catalogue.ts; the shape is protocol's
// ConsoleCatalogue). Fetched once per page load.
import type { ConsoleCatalogue } from '@anneal/protocol';

let loaded: Promise<ConsoleCatalogue> | undefined;

export function catalogue(): Promise<ConsoleCatalogue> {
  loaded ??= fetch('catalogue.json').then(async (res) => {
    if (!res.ok) throw new Error(`catalogue.json: ${res.status}`);
    return (await res.json()) as ConsoleCatalogue;
  });
  return loaded;
}
