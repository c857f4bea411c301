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
});
