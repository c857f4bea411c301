// Line output for streaming commands: batches lines into ~64 KiB writes, waits for 'drain' when the
// pipe is full (bounded memory on large inputs), and treats EPIPE (e.g. `| head`) as a quiet stop.

export interface LineWriter {
  write(line: string): Promise<void> | void;
  end(): Promise<void>;
}

const FLUSH_BYTES = 64 * 1024;

function drainedOrFailed(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise<void>((resolve) => {
    const settle = (): void => {
      stream.off('drain', settle);
      stream.off('error', settle);
      stream.off('close', settle);
      resolve();
    };
    stream.on('drain', settle);
    stream.on('error', settle);
    stream.on('close', settle);
  });
}

export function createStdoutWriter(stream: NodeJS.WritableStream): LineWriter {
  let pending: string[] = [];
  let pendingBytes = 0;
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    closed = true;
  });
  const flush = async (): Promise<void> => {
    if (pending.length === 0 || closed) return;
    const chunk = pending.join('');
    pending = [];
    pendingBytes = 0;
    if (!stream.write(chunk)) await drainedOrFailed(stream);
  };
  return {
    write(line) {
      pending.push(`${line}\n`);
      pendingBytes += line.length + 1;
      return pendingBytes >= FLUSH_BYTES ? flush() : undefined;
    },
    end: flush,
  };
}
