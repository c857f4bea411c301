export type * from './types.ts';
export { ByteTokenizer, SPECIAL_MARKERS } from './embedded/tokenizer.ts';
