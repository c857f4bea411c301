// The part of cli-progress 3.x the CLI uses (the package ships no types).
declare module 'cli-progress' {
  export interface Options {
    format?: string;
    stream?: NodeJS.WritableStream;
    fps?: number;
    barsize?: number;
    barCompleteChar?: string;
    barIncompleteChar?: string;
    hideCursor?: boolean | null;
    clearOnComplete?: boolean;
    stopOnComplete?: boolean;
    autopadding?: boolean;
    emptyOnZero?: boolean;
    gracefulExit?: boolean;
    forceRedraw?: boolean;
  }

  export class SingleBar {
    update(value: number, payload?: Record<string, unknown>): void;
    update(payload: Record<string, unknown>): void;
    setTotal(total: number): void;
    stop(): void;
  }

  export class MultiBar {
    constructor(options: Options, preset?: Options);
    create(total: number, start: number, payload?: Record<string, unknown>): SingleBar;
    remove(bar: SingleBar): boolean;
    log(text: string): void;
    update(): void;
    stop(): void;
  }

  export const Presets: { shades_classic: Options; shades_grey: Options; rect: Options };

  const cliProgress: {
    MultiBar: typeof MultiBar;
    SingleBar: typeof SingleBar;
    Presets: typeof Presets;
  };
  export default cliProgress;
}
