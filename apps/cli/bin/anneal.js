#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's loader (the workspace ships sources, not builds).
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
