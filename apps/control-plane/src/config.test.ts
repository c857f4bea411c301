import { execFileSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OperatorConfigError, loadOperatorConfig } from './config.ts';
import { sha256Hex } from './plugins/auth.ts';

describe('loadOperatorConfig', () => {
  it('local mode: one tenant `default` and an operator token from ANNEAL_TOKEN', async () => {
    const loaded = await loadOperatorConfig({ token: 'my-local-token-123456' });
    expect(Object.keys(loaded.operator.tenants)).toEqual(['default']);
    expect(loaded.operator.tokens[0]).toMatchObject({
      role: 'operator',
      sha256: sha256Hex('my-local-token-123456'),
    });
    expect(loaded.localToken).toEqual({ token: 'my-local-token-123456', generated: false });
  });

  it('local mode without a token generates one', async () => {
    const a = await loadOperatorConfig({});
    const b = await loadOperatorConfig({});
    expect(a.localToken?.generated).toBe(true);
    expect(a.localToken?.token).not.toBe(b.localToken?.token);
    expect(a.operator.tokens[0]?.sha256).toBe(sha256Hex(a.localToken?.token ?? ''));
  });

  it('reports config file errors with pointer and line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'anneal-config-'));
    const path = join(dir, 'anneal.yaml');
    await writeFile(
      path,
      `pools: {default: {}}\ntenants: {acme: {}}\ntokens:\n  - {name: a, sha256: ${'a'.repeat(64)}, role: admin, tenant: acme}\n`,
    );
    const error = await loadOperatorConfig({ configPath: path }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperatorConfigError);
    expect(String((error as Error).message)).toMatch(/\/tokens\/0\/role \(line 4\)/);
  });

  it('refuses to start on a default guardrail rule naming a metric no kind records', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'anneal-config-'));
    const path = join(dir, 'anneal.yaml');
    await writeFile(
      path,
      `pools: {default: {}}\ntenants: {acme: {}}\n` +
        `tokens:\n  - {name: a, sha256: ${'a'.repeat(64)}, role: operator, tenant: acme}\n` +
        'guardrails:\n  rules:\n' +
        '    - {metric: loss, when: nonFinite, action: rollback}\n' +
        '    - {metric: advantage/abs_max, when: nonFinite, action: rollback}\n' +
        '    - {metric: grad_nrom, when: above, value: 100, action: pause}\n',
    );
    const error = await loadOperatorConfig({ configPath: path }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperatorConfigError);
    expect((error as Error).message).toMatch(
      /\/guardrails\/rules\/2\/metric \(line 9\): 'grad_nrom' is not a step metric any run kind records/,
    );
  });

  it('validates registered datasets at start-up, naming dataset and line; records judge needs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'anneal-config-'));
    const qa = join(dir, 'qa.jsonl');
    const chat = join(dir, 'chat.jsonl');
    await writeFile(qa, '{"question":"q","answer":"a"}\n{"question":"q2","answer":""}\n');
    await writeFile(chat, '{"prompt":"p","rubrics":[{"text":"is polite"}]}\n');
    const path = join(dir, 'anneal.yaml');
    const config = (qaPath: string) =>
      `pools: {default: {}}\ntenants: {acme: {}}\n` +
      `tokens:\n  - {name: a, sha256: ${'a'.repeat(64)}, role: operator, tenant: acme}\n` +
      `datasets:\n  my-qa: {kind: qa, path: ${qaPath}}\n  my-chat: {kind: rubric, path: ${chat}}\n`;
    await writeFile(path, config(qa));
    const error = await loadOperatorConfig({ configPath: path }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperatorConfigError);
    expect((error as Error).message).toContain(
      `/datasets/my-qa (${qa}): line 2: answer: must be a non-empty string`,
    );
    await writeFile(qa, '{"question":"q","answer":"a"}\n');
    const loaded = await loadOperatorConfig({ configPath: path });
    expect(loaded.datasetFacts).toEqual({ needsJudge: ['my-chat'] });
    await writeFile(path, config(join(dir, 'missing.jsonl')));
    await expect(loadOperatorConfig({ configPath: path })).rejects.toThrow(
      /\/datasets\/my-qa \(.*missing\.jsonl\): cannot read/,
    );
    // A FIFO in place of the file is refused at once (it used to block the start forever).
    const fifo = join(dir, 'fifo.jsonl');
    execFileSync('mkfifo', [fifo]);
    await writeFile(path, config(fifo));
    await expect(loadOperatorConfig({ configPath: path })).rejects.toThrow(
      `/datasets/my-qa (${fifo}): is a FIFO, not a regular file`,
    );
  });
});
