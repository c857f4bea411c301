import { describe, expect, it } from 'vitest';
import { StepRecord } from './step-record.ts';
import { PauseRequest } from './run-state.ts';
import { StoredRecordError, parseStored, parseStoredLine } from './stored-record.ts';

const KEY = 'anneal:run:r1:steps 3';

describe('parseStored', () => {
  it('returns a record that matches its schema, date-times included', () => {
    const text = JSON.stringify({
      step: 3,
      metrics: { loss: 0.5 },
      at: '2026-01-02T03:04:05.678Z',
    });
    expect(parseStored(StepRecord, text, KEY)).toEqual(JSON.parse(text));
  });

  it('names the key and the field of a record an older worker wrote (a field it lacks)', () => {
    const older = JSON.stringify({ step: 3, metrics: { loss: 0.5 } });
    expect(() => parseStored(StepRecord, older, KEY)).toThrow(
      `stored record ${KEY} field /at: Expected required property`,
    );
  });

  it('names the field of a mistyped value and of a property the schema does not know', () => {
    const mistyped = JSON.stringify({ step: '3', metrics: {}, at: '2026-01-02T03:04:05Z' });
    const error = (() => {
      try {
        parseStored(StepRecord, mistyped, () => KEY);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(StoredRecordError);
    expect(error).toMatchObject({ source: KEY, field: '/step' });
    const extra = { step: 3, metrics: {}, at: '2026-01-02T03:04:05Z', tokens: 1 };
    expect(() => parseStored(StepRecord, JSON.stringify(extra), KEY)).toThrow(
      /field \/tokens: Unexpected property/,
    );
  });

  it('refuses a timestamp that is not an RFC 3339 date-time', () => {
    const pause = { by: 'user', reason: 'x', requestedAt: 'yesterday' };
    expect(() => parseStored(PauseRequest, JSON.stringify(pause), 'anneal:run:r1 pause')).toThrow(
      /anneal:run:r1 pause field \/requestedAt/,
    );
  });

  it('names the source of text that is not JSON', () => {
    expect(() => parseStored(StepRecord, '{"step":', KEY)).toThrow(
      new RegExp(`^stored record ${KEY}: not JSON`),
    );
  });
});

describe('parseStoredLine', () => {
  it('skips a line cut short and checks a whole one', () => {
    expect(parseStoredLine(StepRecord, '{"step":3,"met', 'items.jsonl line 9')).toBeUndefined();
    expect(() => parseStoredLine(StepRecord, '{"step":3}', 'items.jsonl line 9')).toThrow(
      /items\.jsonl line 9 field \/metrics/,
    );
  });
});
