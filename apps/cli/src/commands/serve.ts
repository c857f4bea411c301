// `anneal serve sampler` and `anneal serve trainer`: the embedded engines as servers of their
// own, so several workers share them as they would share a vLLM deployment and a Tinker-compatible
// trainer (docs/engines.md "Embedded sampler server", docs/operations.md "Embedded engines as
// servers"). The sampler speaks the vLLM routes Anneal's vLLM client uses and loads the trainer's
// ONNX sampler exports as adapters; the trainer speaks the Tinker HTTP subset. SIGTERM / SIGINT:
// stop listening and exit.
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { writeErr } from '../ops/terminal-text.ts';

function integer(min: number, max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`must be an integer ${min}-${max}.`);
    }
    return Number(value);
  };
}

interface ListenFlags {
  host: string;
  port: number;
  apiKeyEnv?: string;
  threads?: number;
}

interface SamplerFlags extends ListenFlags {
  servedModelName: string;
  maxLoras: number;
  base?: string;
  maxModelLen?: number;
}

interface TrainerFlags extends ListenFlags {
  artifactDir: string;
}

/** The key named by `--api-key-env`; exits 2 when that variable is unset. */
function apiKeyOf(command: string, flags: ListenFlags): string | undefined {
  if (flags.apiKeyEnv === undefined) return undefined;
  const key = process.env[flags.apiKeyEnv];
  if (!key) {
    writeErr(`anneal serve ${command}: --api-key-env ${flags.apiKeyEnv} is not set\n`);
    process.exit(2);
  }
  return key;
}

/** Serves until SIGTERM / SIGINT, then closes. */
async function serveUntilSignal(close: () => Promise<void>): Promise<void> {
  await new Promise<void>((resolve) => {
    const onSignal = () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      close().then(resolve, (error: unknown) => {
        writeErr(`anneal serve: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

async function serveSampler(flags: SamplerFlags): Promise<void> {
  const apiKey = apiKeyOf('sampler', flags);
  // Loaded on use: onnxruntime is heavy and other commands must not pay for it.
  const { EmbeddedSamplerServer } = await import('@anneal/engines');
  const server = new EmbeddedSamplerServer({
    servedModel: flags.servedModelName,
    maxLoras: flags.maxLoras,
    ...(flags.base !== undefined && { baseExport: flags.base }),
    ...(flags.maxModelLen !== undefined && { maxModelLen: flags.maxModelLen }),
    ...(apiKey !== undefined && { apiKey }),
    ...(flags.threads !== undefined && { engine: { threads: flags.threads } }),
  });
  const url = await server.listen(flags.port, flags.host);
  writeErr(
    `anneal: embedded sampler on ${url} (served model ${flags.servedModelName}, max-loras ${flags.maxLoras})\n`,
  );
  await serveUntilSignal(() => server.close());
}

async function serveTrainer(flags: TrainerFlags): Promise<void> {
  const apiKey = apiKeyOf('trainer', flags);
  const { EmbeddedTrainer, EmbeddedTrainerServer } = await import('@anneal/engines');
  const trainer = new EmbeddedTrainer({
    artifactDir: flags.artifactDir,
    ...(flags.threads !== undefined && { threads: flags.threads }),
  });
  const server = new EmbeddedTrainerServer(trainer, apiKey === undefined ? {} : { apiKey });
  const url = await server.listen(flags.port, flags.host);
  writeErr(`anneal: embedded trainer on ${url} (artifacts ${flags.artifactDir})\n`);
  await serveUntilSignal(async () => {
    await server.close();
    await trainer.close();
  });
}

function listenOptions(command: Command, defaultPort: number): Command {
  return command
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', `port (0 = any; default ${defaultPort})`, integer(0, 65535), defaultPort)
    .option('--api-key-env <VAR>', 'require the key in this environment variable')
    .option('--threads <n>', 'compute worker threads (default: 2 on 2+ cores)', integer(1, 256));
}

export function register(program: Command): void {
  const serve = program
    .command('serve')
    .description('Run an embedded engine as a server that several workers share');
  listenOptions(
    serve
      .command('sampler')
      .description(
        "The embedded ONNX sampler over vLLM's OpenAI-compatible routes; loads the embedded " +
          "trainer's sampler exports as adapters (declare it as a type: vllm endpoint with " +
          'server: anneal-embedded)',
      )
      .requiredOption(
        '--served-model-name <name>',
        "the base model's name (the endpoint's servedModel)",
      )
      .option(
        '--max-loras <n>',
        "weight sets resident at once (the endpoint's maxLoras)",
        integer(1, 1024),
        4,
      )
      .option('--base <dir>', 'an ONNX export of the base model (else only adapters are sampled)')
      .option(
        '--max-model-len <n>',
        'context window (default 256, the embedded model)',
        integer(2, 1 << 20),
      ),
    8000,
  ).action((flags: SamplerFlags) => serveSampler(flags));
  listenOptions(
    serve
      .command('trainer')
      .description(
        'The embedded trainer over the Tinker-compatible HTTP subset (declare it as a type: ' +
          'tinker trainer with backend: embedded)',
      )
      .requiredOption(
        '--artifact-dir <dir>',
        'checkpoints and sampler exports (<dir>/<model_id>/…)',
      ),
    8001,
  ).action((flags: TrainerFlags) => serveTrainer(flags));
}
