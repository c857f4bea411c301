import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../bin/anneal.js', import.meta.url));

function anneal(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'anneal-data-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('anneal data validate', () => {
  it('reports every bad row with line and field, exit 2', async () => {
    const file = join(dir, 'qa.jsonl');
    await writeFile(
      file,
      [
        '{"question":"Q?","answer":"A"}',
        '{"question":"Q?","answer":""}',
        '{"qestion":"x","answer":"y"}',
      ].join('\n'),
    );
    const { code, stderr } = await anneal(['data', 'validate', '--kind', 'qa', file]);
    expect(code).toBe(2);
    expect(stderr).toContain(`${file}: line 2: answer: must be a non-empty string`);
    expect(stderr).toContain(`${file}: line 3: qestion: unknown field`);
    expect(stderr).toContain('3 error(s); 1 valid qa row(s)');
  });

  it('reads the file as the control plane does: UTF-8 and line caps by line, no FIFO', async () => {
    const file = join(dir, 'bytes.jsonl');
    await writeFile(
      file,
      Buffer.concat([
        Buffer.from('{"question":"Q?","answer":"A"}\n{"question":"'),
        Buffer.from([0xff]),
        Buffer.from(`?","answer":"A"}\n{"question":"${'x'.repeat(1_100_000)}","answer":"A"}\n`),
      ]),
    );
    const bad = await anneal(['data', 'validate', '--kind', 'qa', file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`${file}: line 2: not valid UTF-8`);
    expect(bad.stderr).toContain(
      `${file}: line 3: line is 1100028 bytes, over the limit of 1048576`,
    );
    expect(bad.stderr).toContain('2 error(s); 1 valid qa row(s)');
    const fifo = join(dir, 'fifo.jsonl');
    await new Promise((done) => execFile('mkfifo', [fifo], done));
    const piped = await anneal(['data', 'validate', '--kind', 'qa', fifo]);
    expect(piped.code).toBe(2);
    expect(piped.stderr).toContain('is a FIFO, not a regular file');
  });

  it('accepts a valid file', async () => {
    const file = join(dir, 'pairs.jsonl');
    await writeFile(file, '{"prompt":"p","chosen":"a","rejected":"b"}\n');
    const { code, stdout } = await anneal(['data', 'validate', '--kind', 'preference', file]);
    expect([code, stdout]).toEqual([0, `${file}: ok, 1 preference row(s)\n`]);
  });
});

describe('anneal data calibrate', () => {
  // An OpenAI-compatible sampler that honours only n=1 (as some servers do): the command must
  // ask again until it has k responses. Prompt "all" always says yes, "none" never, "some" alternates.
  let requests = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const prompt = (JSON.parse(body) as { messages: Array<{ content: string }> }).messages[0]!
        .content;
      requests++;
      const content =
        prompt === 'all' ? 'yes' : prompt === 'none' ? 'no' : requests % 2 ? 'yes' : 'no';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 0,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        }),
      );
    });
  });
  let url = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('keeps prompts with 0 < passes < k and writes them unchanged', async () => {
    const input = join(dir, 'rubric.jsonl');
    const rubric = '[{"text":"says yes","check":{"type":"contains_all","terms":["yes"]}}]';
    const lines = ['all', 'none', 'some'].map((p) => `{"prompt":"${p}","rubrics":${rubric}}`);
    await writeFile(input, lines.join('\n'));
    const output = join(dir, 'kept.jsonl');
    const report = join(dir, 'report.jsonl');
    const { code, stderr } = await anneal([
      'data',
      'calibrate',
      '--input',
      input,
      '--k',
      '4',
      '--concurrency',
      '1',
      '--sampler-url',
      url,
      '--sampler-model',
      'policy',
      '--output',
      output,
      '--report',
      report,
    ]);
    expect(code).toBe(0);
    expect(await readFile(output, 'utf8')).toBe(`${lines[2]}\n`);
    expect(
      (await readFile(report, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      { line: 1, passes: 4, k: 4, kept: false },
      { line: 2, passes: 0, k: 4, kept: false },
      { line: 3, passes: 2, k: 4, kept: true },
    ]);
    expect(stderr).toContain('kept 1 of 3 prompts (all 4 passed: 1, none passed: 1)');
    expect(requests).toBe(12);
  });

  it('refuses invalid rows and judge-less free-text rubrics before sampling', async () => {
    const input = join(dir, 'bad.jsonl');
    await writeFile(input, '{"prompt":"p","rubrics":[]}\n');
    const bad = await anneal([
      'data',
      'calibrate',
      '--input',
      input,
      '--sampler-url',
      url,
      '--sampler-model',
      'm',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('line 1: rubrics: must have at least 1 item(s)');
    await writeFile(input, '{"prompt":"p","rubrics":["is polite"]}\n');
    const before = requests;
    const noJudge = await anneal([
      'data',
      'calibrate',
      '--input',
      input,
      '--sampler-url',
      url,
      '--sampler-model',
      'm',
    ]);
    expect(noJudge.code).toBe(2);
    expect(noJudge.stderr).toContain(
      '"is polite" has no programmatic check and no judge endpoint is configured',
    );
    expect(requests).toBe(before); // nothing was sampled
  });
});
