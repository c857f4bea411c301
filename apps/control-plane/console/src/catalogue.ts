// /console/catalogue.json: run states and kinds, and the step-curve panels, from the server's
// own tables (apps/control-plane/src/services/console-catalogue.ts). Fetched once per page load.
export interface StepMetricPanel {
  id: string;
  title: string;
  section: string;
  featured: boolean;
  unit: string;
  kinds: readonly string[];
  help: string;
  lines: { key: string; legend: string }[];
}

export interface ConsoleCatalogue {
  states: readonly string[];
  kinds: readonly string[];
  sections: { id: string; title: string }[];
  panels: StepMetricPanel[];
}

let loaded: Promise<ConsoleCatalogue> | undefined;

export function catalogue(): Promise<ConsoleCatalogue> {
  loaded ??= fetch('catalogue.json').then(async (res) => {
    if (!res.ok) throw new Error(`catalogue.json: ${res.status}`);
    return (await res.json()) as ConsoleCatalogue;
  });
  return loaded;
}
