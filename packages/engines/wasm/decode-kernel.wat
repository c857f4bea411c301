;; The hot loop of the tokenizer's `decode` (src/tokenizers/decode-table.ts, hf-bpe.ts): token ids
;; to their UTF-8 bytes through the tokenizer's table of 16-byte rows in this module's memory.
;; Row `id` is at 16·id: up to 15 bytes of the token in bytes 0–14 and their count in byte 15.
;; A count of 0 (a row not built yet) or above 15 (an added token or a longer one, whose text
;; JavaScript keeps), or an id outside the table, stops the loop: JavaScript takes that token
;; over and calls again. Each token stores its whole row (one 16-byte store) and the next token
;; is written over the row's spare bytes, so there is no per-byte loop.
;;
;; Memory contract (kept by decode-table.ts): rows at [0, 16·$rows); the ids and the bytes
;; written elsewhere, with at least 16 writable bytes past the last token's; offsets absolute.
(module
  (memory (export "memory") 1)
  ;; the offset after the bytes the last copy_rows call wrote
  (global $end (export "end") (mut i32) (i32.const 0))

  ;; The bytes of ids $from .. $count (int32 at $ids) from their rows, written from $out, up to
  ;; the first id that stops the loop. Returns that id's index ($count when none); $end is after
  ;; the bytes written.
  (func (export "copy_rows") (param $ids i32) (param $from i32) (param $count i32) (param $rows i32)
    (param $out i32) (result i32)
    (local $i i32) (local $row i32) (local $size i32)
    (local.set $i (local.get $from))
    (block $stop
      (loop $tokens
        (br_if $stop (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $row (i32.load (i32.add (local.get $ids) (i32.shl (local.get $i) (i32.const 2)))))
        ;; unsigned: a negative id is outside the table too
        (br_if $stop (i32.ge_u (local.get $row) (local.get $rows)))
        (local.set $row (i32.shl (local.get $row) (i32.const 4)))
        (local.set $size (i32.load8_u offset=15 (local.get $row)))
        ;; a count of 0 or above 15: count - 1, unsigned, is 15 or more
        (br_if $stop (i32.ge_u (i32.sub (local.get $size) (i32.const 1)) (i32.const 15)))
        (v128.store (local.get $out) (v128.load (local.get $row)))
        (local.set $out (i32.add (local.get $out) (local.get $size)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $tokens)))
    (global.set $end (local.get $out))
    (local.get $i)))
