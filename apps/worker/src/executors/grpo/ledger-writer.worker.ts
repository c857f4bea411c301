// The rollout ledger's writer thread (ledger-writer.ts): serialises each step's records to JSON
// lines, gzips them and writes the step's copy (@anneal/store writeLedgerStep), so that none of
// it runs on the worker's event loop.
import { serveRpc } from '@anneal/engines';
import { writeLedgerStep, type LedgerStepInput } from '@anneal/store/files';

export interface LedgerWriteRequest {
  runDir: string;
  input: LedgerStepInput;
}

serveRpc(async (payload) => {
  const { runDir, input } = payload as LedgerWriteRequest;
  await writeLedgerStep(runDir, input);
  return { result: null };
});
