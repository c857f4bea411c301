import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/.turbo/**', '**/dist/**', '.anneal/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        fetch: 'readonly',
        Buffer: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      // `import { type A } from 'm'` keeps `import 'm'` under verbatimModuleSyntax: the module is
      // loaded (and bundled) for nothing; `import type { A }` is erased.
      '@typescript-eslint/no-import-type-side-effects': 'error',
    },
  },
  {
    // Packages take config as arguments; only apps parse the environment (docs/conventions.md).
    files: ['packages/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Packages receive config; parse env in the app.',
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='Math'][property.name='random']",
          message: 'Pass a seeded RNG instead of Math.random.',
        },
      ],
    },
  },
  {
    // Shipped code never imports test code: test doubles live in each workspace's test/ (outside
    // src/, so never built into dist/ or an image), other workspaces reach them only through the
    // source-only `@anneal/engines/testing` export (tools/repo-checks/src/shipped-code.test.ts).
    files: ['apps/*/src/**/*.ts', 'packages/*/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/test/**', '@anneal/*/testing', '@anneal/testing'],
              message: 'Test code stays out of src/: import it from tests only.',
            },
          ],
        },
      ],
    },
  },
  {
    // CommonJS config files at the root (dependency-cruiser reads its config with require()).
    files: ['*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
