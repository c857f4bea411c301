;; The hot loops of http/json-bytes-reader.ts over a reply copied into this module's memory
;; (src/http/json-kernel.ts): skipping vLLM's per-token arrays (`top_logprobs`, `tokens`,
;; `text_offset`) and long strings (`text`, escapes checked and passed), and reading arrays of
;; float32 logprobs and of int32 ids. Each function reads only the plainest form of its array —
;; no whitespace, no escape in an array's string, at most 19 significant digits and an exponent
;; within ±22 in a number — and returns -1 for anything else,
;; leaving that array to the JavaScript reader, which then reads it (or refuses it) as it always
;; has. So what this module accepts, it accepts with the JavaScript reader's answer, and it never
;; refuses on its own: src/http/json-kernel.test.ts checks both against the JavaScript loops.
;; And the loop of http/json-text.ts's `float32s` (write_f32s): float32 values as the short text
;; http/float32-text.ts `writeFloat32Of` writes, the same algorithm in the same double
;; arithmetic, stopping at every value that writer would not write (integers, a value equal to
;; the one before, magnitudes outside [1e-14, 1e9)) for the JavaScript writer to take over.
;;
;; Memory contract (kept by json-kernel.ts): bytes [0, 512) hold the constants below; the reply's
;; bytes are followed by at least 16 zero bytes, so a load of 8 bytes at any offset the loops reach
;; stays inside the reply's padding, and a zero byte ends every loop (no array, number, string or
;; literal holds a raw zero byte). Offsets in and out are absolute (the caller adds its base).
;;     0 .. 184  10^0 .. 10^22 as f64 (each exact)
;;   192 .. 376  10^-14 .. 10^9 as f64 (the nearest doubles: float32-text.ts's POWERS)
(module
  (memory (export "memory") 1)
  ;; the offset after the array the last read_* call read
  (global $end (export "end") (mut i32) (i32.const 0))

  (func $init
    (local $k i32) (local $p f64)
    (local.set $p (f64.const 1))
    (loop $powers
      (f64.store (i32.shl (local.get $k) (i32.const 3)) (local.get $p))
      (local.set $p (f64.mul (local.get $p) (f64.const 10)))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br_if $powers (i32.le_u (local.get $k) (i32.const 22))))
    ;; 10^k for k = -14 .. 9 at 192 + 8 (k + 14): 1 / 10^-k is the nearest double to 10^k (one
    ;; correctly rounded division of exact operands), as the literal 1e-14 is
    (local.set $k (i32.const -14))
    (loop $scaled
      (f64.store offset=192 (i32.shl (i32.add (local.get $k) (i32.const 14)) (i32.const 3))
        (if (result f64) (i32.lt_s (local.get $k) (i32.const 0))
          (then (f64.div (f64.const 1) (f64.load (i32.shl (i32.sub (i32.const 0) (local.get $k)) (i32.const 3)))))
          (else (f64.load (i32.shl (local.get $k) (i32.const 3))))))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br_if $scaled (i32.le_s (local.get $k) (i32.const 9)))))
  (start $init)

  ;; The first offset from $p that is not an ASCII digit, eight bytes at a time: a byte's flag
  ;; (its high nibble) is set when that nibble is not 3 or its low nibble is above 9 (adding 6 to
  ;; the low nibble alone carries into the high one, never into the next byte), so the lowest
  ;; flagged byte is the first that is not a digit.
  (func $digits_end (param $p i32) (result i32)
    (local $x i64) (local $flags i64)
    (loop $eight
      (local.set $x (i64.load (local.get $p)))
      (local.set $flags (i64.or
        (i64.xor (i64.and (local.get $x) (i64.const 0xf0f0f0f0f0f0f0f0)) (i64.const 0x3030303030303030))
        (i64.and (i64.add (i64.and (local.get $x) (i64.const 0x0f0f0f0f0f0f0f0f)) (i64.const 0x0606060606060606))
          (i64.const 0xf0f0f0f0f0f0f0f0))))
      (if (i64.eqz (local.get $flags))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 8)))
          (br $eight))))
    (i32.add (local.get $p) (i32.wrap_i64 (i64.shr_u (i64.ctz (local.get $flags)) (i64.const 3)))))

  ;; From the byte after $p: the offset of the first quote, backslash or control byte. Eight
  ;; bytes at a time: a byte equal to a quote or a backslash (XOR makes it zero) or below 0x20
  ;; leaves the borrow of a subtraction in its top bit; a borrow out of a flagged byte may flag
  ;; the bytes above it too, never one below, so the lowest flagged byte is the first such byte.
  (func $special_after (param $p i32) (result i32)
    (local $x i64) (local $q i64) (local $s i64) (local $flags i64)
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (loop $scan
      (local.set $x (i64.load (local.get $p)))
      (local.set $q (i64.xor (local.get $x) (i64.const 0x2222222222222222)))
      (local.set $s (i64.xor (local.get $x) (i64.const 0x5c5c5c5c5c5c5c5c)))
      (local.set $flags (i64.and (i64.const 0x8080808080808080)
        (i64.or
          (i64.or
            (i64.and (i64.sub (local.get $q) (i64.const 0x0101010101010101)) (i64.xor (local.get $q) (i64.const -1)))
            (i64.and (i64.sub (local.get $s) (i64.const 0x0101010101010101)) (i64.xor (local.get $s) (i64.const -1))))
          (i64.and (i64.sub (local.get $x) (i64.const 0x2020202020202020)) (i64.xor (local.get $x) (i64.const -1))))))
      (if (i64.eqz (local.get $flags))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 8)))
          (br $scan))))
    (i32.add (local.get $p) (i32.wrap_i64 (i64.shr_u (i64.ctz (local.get $flags)) (i64.const 3)))))

  ;; A string from its opening quote at $p without escapes or control bytes: the offset after its
  ;; closing quote, or -1.
  (func $string_end (param $p i32) (result i32)
    (local.set $p (call $special_after (local.get $p)))
    (if (result i32) (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x22))
      (then (i32.add (local.get $p) (i32.const 1)))
      (else (i32.const -1))))

  ;; A skipped string (a reply's `text`, kilobytes a choice) from its opening quote at $p: the
  ;; offset after its closing quote, or -1 (a control byte, an escape stringEnd refuses). Its
  ;; escapes are checked as stringEnd checks them (one of \" \\ \/ \b \f \n \r \t, or \u and
  ;; four hex digits) and passed over.
  (func (export "skip_string") (param $p i32) (result i32)
    (local $b i32) (local $k i32)
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x22)) (then (return (i32.const -1))))
    (loop $run
      (local.set $p (call $special_after (local.get $p)))
      (local.set $b (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $b) (i32.const 0x22)) (then (return (i32.add (local.get $p) (i32.const 1)))))
      (if (i32.ne (local.get $b) (i32.const 0x5c)) (then (return (i32.const -1))))
      ;; $p on the backslash: the escaped byte, then (for \u) four hex digits; $p ends on the
      ;; escape's last byte, the scan going on after it
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $b (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $b) (i32.const 0x75))
        (then
          (local.set $k (i32.const 4))
          (loop $hex
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (local.set $b (i32.load8_u (local.get $p)))
            (if (i32.eqz (i32.or
                  (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))
                  (i32.lt_u (i32.sub (i32.or (local.get $b) (i32.const 0x20)) (i32.const 0x61)) (i32.const 6))))
              (then (return (i32.const -1))))
            (local.set $k (i32.sub (local.get $k) (i32.const 1)))
            (br_if $hex (local.get $k)))
          (br $run)))
      ;; " \ / b f n r t
      (br_if $run (i32.or
        (i32.or
          (i32.or (i32.eq (local.get $b) (i32.const 0x22)) (i32.eq (local.get $b) (i32.const 0x5c)))
          (i32.or (i32.eq (local.get $b) (i32.const 0x2f)) (i32.eq (local.get $b) (i32.const 0x62))))
        (i32.or
          (i32.or (i32.eq (local.get $b) (i32.const 0x66)) (i32.eq (local.get $b) (i32.const 0x6e)))
          (i32.or (i32.eq (local.get $b) (i32.const 0x72)) (i32.eq (local.get $b) (i32.const 0x74))))))
      (return (i32.const -1)))
    (i32.const -1))

  ;; A JSON number's grammar from its sign or first digit at $p: the offset after it, or -1.
  (func $number_end (param $p i32) (result i32)
    (local $b i32)
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2d))
      (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    (local.set $b (i32.load8_u (local.get $p)))
    (if (i32.eq (local.get $b) (i32.const 0x30))
      (then (local.set $p (i32.add (local.get $p) (i32.const 1))))
      (else
        (if (i32.eqz (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))) (then (return (i32.const -1))))
        (local.set $p (call $digits_end (local.get $p)))))
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2e))
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (i32.eqz (i32.lt_u (i32.sub (i32.load8_u (local.get $p)) (i32.const 0x30)) (i32.const 10))) (then (return (i32.const -1))))
        (local.set $p (call $digits_end (local.get $p)))))
    (local.set $b (i32.or (i32.load8_u (local.get $p)) (i32.const 0x20)))
    (if (i32.eq (local.get $b) (i32.const 0x65))
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (local.set $b (i32.load8_u (local.get $p)))
        (if (i32.or (i32.eq (local.get $b) (i32.const 0x2d)) (i32.eq (local.get $b) (i32.const 0x2b)))
          (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
        (if (i32.eqz (i32.lt_u (i32.sub (i32.load8_u (local.get $p)) (i32.const 0x30)) (i32.const 10))) (then (return (i32.const -1))))
        (local.set $p (call $digits_end (local.get $p)))))
    (local.get $p))

  ;; A string, number or literal at $p: the offset after it, or -1.
  (func $scalar_end (param $p i32) (result i32)
    (local $b i32)
    (local.set $b (i32.load8_u (local.get $p)))
    (if (i32.eq (local.get $b) (i32.const 0x22)) (then (return (call $string_end (local.get $p)))))
    (if (i32.or (i32.eq (local.get $b) (i32.const 0x2d)) (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10)))
      (then (return (call $number_end (local.get $p)))))
    ;; "null", "true" (four bytes as i32.load reads them), "false"
    (if (i32.eq (i32.load (local.get $p)) (i32.const 0x6c6c756e))
      (then (return (i32.add (local.get $p) (i32.const 4)))))
    (if (i32.eq (i32.load (local.get $p)) (i32.const 0x65757274))
      (then (return (i32.add (local.get $p) (i32.const 4)))))
    (if (i32.and (i32.eq (i32.load (local.get $p)) (i32.const 0x736c6166))
          (i32.eq (i32.load8_u offset=4 (local.get $p)) (i32.const 0x65)))
      (then (return (i32.add (local.get $p) (i32.const 5)))))
    (i32.const -1))

  ;; An array from its opening bracket at $p whose elements are scalars, or objects whose members'
  ;; values are scalars, written without whitespace (flatArrayEnd's arrays): the offset after its
  ;; closing bracket, or -1.
  (func (export "skip_flat") (param $p i32) (result i32)
    (local $b i32)
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x5b)) (then (return (i32.const -1))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x5d))
      (then (return (i32.add (local.get $p) (i32.const 1)))))
    (loop $element
      (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x7b))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x7d))
            (then (local.set $p (i32.add (local.get $p) (i32.const 1))))
            (else
              (block $closed
                (loop $member
                  (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x22)) (then (return (i32.const -1))))
                  (local.set $p (call $string_end (local.get $p)))
                  (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
                  (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x3a)) (then (return (i32.const -1))))
                  (local.set $p (call $scalar_end (i32.add (local.get $p) (i32.const 1))))
                  (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
                  (local.set $b (i32.load8_u (local.get $p)))
                  (local.set $p (i32.add (local.get $p) (i32.const 1)))
                  (br_if $closed (i32.eq (local.get $b) (i32.const 0x7d)))
                  (br_if $member (i32.eq (local.get $b) (i32.const 0x2c)))
                  (return (i32.const -1)))))))
        (else
          (local.set $p (call $scalar_end (local.get $p)))
          (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))))
      (local.set $b (i32.load8_u (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $element (i32.eq (local.get $b) (i32.const 0x2c))))
    (if (result i32) (i32.eq (local.get $b) (i32.const 0x5d))
      (then (local.get $p))
      (else (i32.const -1))))

  ;; An array of numbers from its opening bracket at $p, each as float32: JSON.parse's double
  ;; rounded to float32, which is what readFloat32 gives (see there). A number of at most 16
  ;; significant digits whose mantissa is below 2^53 is one correctly rounded operation (Clinger:
  ;; an exact integer times or over an exact power of ten), then rounded to float32; a longer one
  ;; (up to 19 digits, held exactly in an i64) is within 2^-51 of its value after two roundings,
  ;; and is taken when both ends of ±2^-48 round to the same float32 (then so does JSON.parse's
  ;; double, which lies between them), else the array is left to the JavaScript reader. The
  ;; values go to $out (at most $capacity of them); the count, $end after the array; or -1.
  (func (export "read_f32s") (param $p i32) (param $out i32) (param $capacity i32) (result i32)
    (local $count i32) (local $b i32) (local $negative i32) (local $m i64) (local $significant i32)
    (local $scale i32) (local $exponent i32) (local $negativeExponent i32)
    (local $v f64) (local $low f32) (local $value f32)
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x5b)) (then (return (i32.const -1))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x5d))
      (then
        (global.set $end (i32.add (local.get $p) (i32.const 1)))
        (return (i32.const 0))))
    (loop $element
      (if (i32.ge_u (local.get $count) (local.get $capacity)) (then (return (i32.const -1))))
      (local.set $negative (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2d)))
      (local.set $p (i32.add (local.get $p) (local.get $negative)))
      (local.set $m (i64.const 0))
      (local.set $significant (i32.const 0))
      (local.set $scale (i32.const 0))
      (local.set $b (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $b) (i32.const 0x30))
        (then (local.set $p (i32.add (local.get $p) (i32.const 1))))
        (else
          (if (i32.eqz (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))) (then (return (i32.const -1))))
          (loop $integer
            (local.set $m (i64.add (i64.mul (local.get $m) (i64.const 10))
              (i64.extend_i32_u (i32.sub (local.get $b) (i32.const 0x30)))))
            (local.set $significant (i32.add (local.get $significant) (i32.const 1)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (local.set $b (i32.load8_u (local.get $p)))
            (br_if $integer (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))))))
      (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2e))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (local.set $b (i32.load8_u (local.get $p)))
          (if (i32.eqz (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))) (then (return (i32.const -1))))
          (if (i64.eqz (local.get $m))
            (then
              ;; the fraction's leading zeros are not significant
              (block $nonzero
                (loop $zeros
                  (br_if $nonzero (i32.ne (local.get $b) (i32.const 0x30)))
                  (local.set $scale (i32.sub (local.get $scale) (i32.const 1)))
                  (local.set $p (i32.add (local.get $p) (i32.const 1)))
                  (local.set $b (i32.load8_u (local.get $p)))
                  (br $zeros)))))
          (block $fraction_end
            (loop $fraction
              (br_if $fraction_end (i32.eqz (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))))
              (local.set $m (i64.add (i64.mul (local.get $m) (i64.const 10))
                (i64.extend_i32_u (i32.sub (local.get $b) (i32.const 0x30)))))
              (local.set $significant (i32.add (local.get $significant) (i32.const 1)))
              (local.set $scale (i32.sub (local.get $scale) (i32.const 1)))
              (local.set $p (i32.add (local.get $p) (i32.const 1)))
              (local.set $b (i32.load8_u (local.get $p)))
              (br $fraction)))))
      ;; more than 19 significant digits may not fit an i64: left to the JavaScript reader
      (if (i32.gt_u (local.get $significant) (i32.const 19)) (then (return (i32.const -1))))
      (if (i32.eq (i32.or (i32.load8_u (local.get $p)) (i32.const 0x20)) (i32.const 0x65))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (local.set $b (i32.load8_u (local.get $p)))
          (local.set $negativeExponent (i32.eq (local.get $b) (i32.const 0x2d)))
          (if (i32.or (local.get $negativeExponent) (i32.eq (local.get $b) (i32.const 0x2b)))
            (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
          (local.set $b (i32.load8_u (local.get $p)))
          (if (i32.eqz (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))) (then (return (i32.const -1))))
          (local.set $exponent (i32.const 0))
          (loop $digits
            (local.set $exponent (i32.add (i32.mul (local.get $exponent) (i32.const 10))
              (i32.sub (local.get $b) (i32.const 0x30))))
            (if (i32.gt_u (local.get $exponent) (i32.const 1000)) (then (return (i32.const -1))))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (local.set $b (i32.load8_u (local.get $p)))
            (br_if $digits (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))))
          (local.set $scale (select
            (i32.sub (local.get $scale) (local.get $exponent))
            (i32.add (local.get $scale) (local.get $exponent))
            (local.get $negativeExponent)))))
      (if (i32.gt_u (i32.add (local.get $scale) (i32.const 22)) (i32.const 44))
        (then (return (i32.const -1))))
      (local.set $v (f64.convert_i64_u (local.get $m)))
      (local.set $v (if (result f64) (i32.lt_s (local.get $scale) (i32.const 0))
        (then (f64.div (local.get $v) (f64.load (i32.shl (i32.sub (i32.const 0) (local.get $scale)) (i32.const 3)))))
        (else (f64.mul (local.get $v) (f64.load (i32.shl (local.get $scale) (i32.const 3)))))))
      (if (local.get $negative) (then (local.set $v (f64.neg (local.get $v)))))
      (if (i32.and (i32.le_u (local.get $significant) (i32.const 16))
            (i64.lt_u (local.get $m) (i64.const 0x20000000000000)))
        (then (local.set $value (f32.demote_f64 (local.get $v))))
        (else
          (local.set $low (f32.demote_f64 (f64.mul (local.get $v) (f64.const 0x1.fffffffffffep-1))))
          (if (f32.ne (local.get $low) (f32.demote_f64 (f64.mul (local.get $v) (f64.const 0x1.000000000001p+0))))
            (then (return (i32.const -1))))
          (local.set $value (local.get $low))))
      (f32.store (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2))) (local.get $value))
      (local.set $count (i32.add (local.get $count) (i32.const 1)))
      (local.set $b (i32.load8_u (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $element (i32.eq (local.get $b) (i32.const 0x2c))))
    (if (i32.ne (local.get $b) (i32.const 0x5d)) (then (return (i32.const -1))))
    (global.set $end (local.get $p))
    (local.get $count))

  ;; An array of ids from its opening bracket at $p as vLLM writes them (`[1,22,333]`: digits and
  ;; commas, no leading zero, at most INT32_MAX): flatIds' arrays. The ids go to $out (at most
  ;; $capacity of them); the count, $end after the array; or -1.
  (func (export "read_i32s") (param $p i32) (param $out i32) (param $capacity i32) (result i32)
    (local $count i32) (local $first i32) (local $b i32) (local $value i64)
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x5b)) (then (return (i32.const -1))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x5d))
      (then
        (global.set $end (i32.add (local.get $p) (i32.const 1)))
        (return (i32.const 0))))
    (loop $element
      (if (i32.ge_u (local.get $count) (local.get $capacity)) (then (return (i32.const -1))))
      (local.set $first (local.get $p))
      (local.set $value (i64.const 0))
      (local.set $b (i32.load8_u (local.get $p)))
      (block $digits_end
        (loop $digits
          (br_if $digits_end (i32.eqz (i32.lt_u (i32.sub (local.get $b) (i32.const 0x30)) (i32.const 10))))
          (local.set $value (i64.add (i64.mul (local.get $value) (i64.const 10))
            (i64.extend_i32_u (i32.sub (local.get $b) (i32.const 0x30)))))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (if (i32.gt_u (i32.sub (local.get $p) (local.get $first)) (i32.const 10)) (then (return (i32.const -1))))
          (local.set $b (i32.load8_u (local.get $p)))
          (br $digits)))
      (if (i32.eq (local.get $p) (local.get $first)) (then (return (i32.const -1))))
      (if (i64.gt_u (local.get $value) (i64.const 0x7fffffff)) (then (return (i32.const -1))))
      (if (i32.and (i32.gt_u (i32.sub (local.get $p) (local.get $first)) (i32.const 1))
            (i32.eq (i32.load8_u (local.get $first)) (i32.const 0x30)))
        (then (return (i32.const -1))))
      (i32.store (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2))) (i32.wrap_i64 (local.get $value)))
      (local.set $count (i32.add (local.get $count) (i32.const 1)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $element (i32.eq (local.get $b) (i32.const 0x2c))))
    (if (i32.ne (local.get $b) (i32.const 0x5d)) (then (return (i32.const -1))))
    (global.set $end (local.get $p))
    (local.get $count))

  ;; ---- writing: float32-text.ts's writeFloat32Of, value by value ----

  ;; exactly $count digits of $n at $at (zeros first when it has fewer); n / 10 as a multiply
  ;; and a shift (exact for every u32: 0xcccccccd / 2^35 is 1/10 within 2^-35 relative)
  (func $fixed (param $at i32) (param $n i32) (param $count i32)
    (local $i i32) (local $q i32)
    (local.set $i (i32.add (local.get $at) (local.get $count)))
    (block $done
      (loop $digit
        (br_if $done (i32.le_u (local.get $i) (local.get $at)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (local.set $q (i32.wrap_i64 (i64.shr_u
          (i64.mul (i64.extend_i32_u (local.get $n)) (i64.const 0xcccccccd)) (i64.const 35))))
        (i32.store8 (local.get $i) (i32.add (i32.const 0x30)
          (i32.sub (local.get $n) (i32.mul (local.get $q) (i32.const 10)))))
        (local.set $n (local.get $q))
        (br $digit))))

  ;; the $count digits of $n at $at, a point before the last $fraction (at most 8) of them; the
  ;; end. The digits are written whole and the last $fraction moved one place on with one 8-byte
  ;; load and store, so up to 8 bytes past the end are overwritten (write_f32s's caller leaves
  ;; room for them).
  (func $digits (param $at i32) (param $n i32) (param $count i32) (param $fraction i32) (result i32)
    (local $point i32)
    (call $fixed (local.get $at) (local.get $n) (local.get $count))
    (if (i32.eqz (local.get $fraction))
      (then (return (i32.add (local.get $at) (local.get $count)))))
    (local.set $point (i32.sub (i32.add (local.get $at) (local.get $count)) (local.get $fraction)))
    (i64.store offset=1 (local.get $point) (i64.load (local.get $point)))
    (i32.store8 (local.get $point) (i32.const 0x2e))
    (i32.add (i32.add (local.get $at) (local.get $count)) (i32.const 1)))

  ;; writeFloat32Of of $v (a float32, not an integer) at $at: the end, or -1 when |v| is outside
  ;; [1e-14, 1e9) (NaN and infinities included). The steps and their double arithmetic are
  ;; float32-text.ts's; see there for why 9 digits always read back and shorter ones are checked.
  ;; float32-text.ts's `scaled` (a · 10^k rounded once: a multiply, or a division for k < 0) and
  ;; Math.round (of a value >= 0: floor, one more from a fraction of 0.5) are written out in
  ;; place: V8 does not inline calls between WebAssembly functions, and they ran a dozen times a
  ;; value.
  (func $write_one (param $v f32) (param $at i32) (result i32)
    (local $a f32) (local $ad f64) (local $e i32) (local $x f64) (local $n i32) (local $count i32)
    (local $k i32) (local $shorter f64) (local $z i32) (local $floor f64)
    (local.set $a (f32.abs (local.get $v)))
    (local.set $ad (f64.promote_f32 (local.get $a)))
    ;; e: the decimal exponent of the first digit, from the binary exponent b: floor(b log10 2)
    ;; or one more, told apart by the power of ten between them
    (local.set $e (i32.trunc_f64_s (f64.floor (f64.mul
      (f64.convert_i32_s (i32.sub (i32.and (i32.shr_u (i32.reinterpret_f32 (local.get $a)) (i32.const 23)) (i32.const 0xff)) (i32.const 127)))
      (f64.const 0x1.34413509f79ffp-2))))) ;; Math.log10(2)
    (if (i32.or (i32.lt_s (local.get $e) (i32.const -15)) (i32.gt_s (local.get $e) (i32.const 8)))
      (then (return (i32.const -1))))
    (if (f64.ge (local.get $ad) (f64.load offset=192 (i32.shl (i32.add (local.get $e) (i32.const 15)) (i32.const 3))))
      (then (local.set $e (i32.add (local.get $e) (i32.const 1)))))
    ;; n: the 9-digit significand, 10^8 <= n < 10^9 (rounding up to 10^9 moves one place up)
    (loop $significand
      (if (i32.or (i32.lt_s (local.get $e) (i32.const -14)) (i32.gt_s (local.get $e) (i32.const 8)))
        (then (return (i32.const -1))))
      ;; x = round(scaled(ad, 8 - e))
      (local.set $k (i32.sub (i32.const 8) (local.get $e)))
      (local.set $x
        (if (result f64) (i32.ge_s (local.get $k) (i32.const 0))
          (then (f64.mul (local.get $ad) (f64.load (i32.shl (local.get $k) (i32.const 3)))))
          (else (f64.div (local.get $ad) (f64.load (i32.shl (i32.sub (i32.const 0) (local.get $k)) (i32.const 3)))))))
      (local.set $floor (f64.floor (local.get $x)))
      (local.set $x (select (f64.add (local.get $floor) (f64.const 1)) (local.get $floor)
        (f64.ge (f64.sub (local.get $x) (local.get $floor)) (f64.const 0.5))))
      (if (f64.ge (local.get $x) (f64.const 1e9))
        (then
          (local.set $e (i32.add (local.get $e) (i32.const 1)))
          (br $significand)))
      (if (f64.lt (local.get $x) (f64.const 1e8))
        (then
          (local.set $e (i32.sub (local.get $e) (i32.const 1)))
          (br $significand))))
    (local.set $n (i32.trunc_f64_u (local.get $x)))
    (local.set $count (i32.const 9))
    (block $trimmed
      (loop $trailing
        (br_if $trimmed (i32.rem_u (local.get $n) (i32.const 10)))
        (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $trailing)))
    ;; shorter while the shorter decimal still reads back as a
    (block $shortest
      (loop $shorten
        (br_if $shortest (i32.le_s (local.get $count) (i32.const 1)))
        (local.set $k (i32.sub (i32.sub (local.get $count) (i32.const 2)) (local.get $e)))
        ;; shorter = round(scaled(ad, k)); read back: scaled(shorter, -k)
        (local.set $x
          (if (result f64) (i32.ge_s (local.get $k) (i32.const 0))
            (then (f64.mul (local.get $ad) (f64.load (i32.shl (local.get $k) (i32.const 3)))))
            (else (f64.div (local.get $ad) (f64.load (i32.shl (i32.sub (i32.const 0) (local.get $k)) (i32.const 3)))))))
        (local.set $floor (f64.floor (local.get $x)))
        (local.set $shorter (select (f64.add (local.get $floor) (f64.const 1)) (local.get $floor)
          (f64.ge (f64.sub (local.get $x) (local.get $floor)) (f64.const 0.5))))
        (br_if $shortest (f32.ne
          (f32.demote_f64
            (if (result f64) (i32.ge_s (local.get $k) (i32.const 0))
              (then (f64.div (local.get $shorter) (f64.load (i32.shl (local.get $k) (i32.const 3)))))
              (else (f64.mul (local.get $shorter) (f64.load (i32.shl (i32.sub (i32.const 0) (local.get $k)) (i32.const 3)))))))
          (local.get $a)))
        (if (f64.eq (local.get $shorter)
              (f64.load (i32.shl (i32.sub (local.get $count) (i32.const 1)) (i32.const 3))))
          (then
            ;; rounded up to the next power of ten: one digit, one place up
            (local.set $n (i32.const 1))
            (local.set $count (i32.const 1))
            (local.set $e (i32.add (local.get $e) (i32.const 1)))
            (br $shortest)))
        (local.set $n (i32.trunc_f64_u (local.get $shorter)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $shorten)))
    (if (f32.lt (local.get $v) (f32.const 0))
      (then
        (i32.store8 (local.get $at) (i32.const 0x2d))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))))
    (if (i32.ge_s (local.get $e) (i32.const 0))
      (then
        (if (i32.gt_s (local.get $count) (i32.add (local.get $e) (i32.const 1)))
          (then (return (call $digits (local.get $at) (local.get $n) (local.get $count)
            (i32.sub (i32.sub (local.get $count) (local.get $e)) (i32.const 1))))))
        ;; digits, then zeros to the point: an integer
        (local.set $at (call $digits (local.get $at) (local.get $n) (local.get $count) (i32.const 0)))
        (local.set $z (local.get $count))
        (block $zeros_done
          (loop $zeros
            (br_if $zeros_done (i32.gt_s (local.get $z) (local.get $e)))
            (i32.store8 (local.get $at) (i32.const 0x30))
            (local.set $at (i32.add (local.get $at) (i32.const 1)))
            (local.set $z (i32.add (local.get $z) (i32.const 1)))
            (br $zeros)))
        (return (local.get $at))))
    (if (i32.ge_s (local.get $e) (i32.const -6))
      (then
        ;; "0." and the zeros before the first digit
        (i32.store16 (local.get $at) (i32.const 0x2e30))
        (local.set $at (i32.add (local.get $at) (i32.const 2)))
        (local.set $z (i32.const -1))
        (block $zeros_done
          (loop $zeros
            (br_if $zeros_done (i32.le_s (local.get $z) (local.get $e)))
            (i32.store8 (local.get $at) (i32.const 0x30))
            (local.set $at (i32.add (local.get $at) (i32.const 1)))
            (local.set $z (i32.sub (local.get $z) (i32.const 1)))
            (br $zeros)))
        (return (call $digits (local.get $at) (local.get $n) (local.get $count) (i32.const 0)))))
    (local.set $at (call $digits (local.get $at) (local.get $n) (local.get $count)
      (i32.sub (local.get $count) (i32.const 1))))
    (i32.store16 (local.get $at) (i32.const 0x2d65)) ;; "e-"
    (call $digits (i32.add (local.get $at) (i32.const 2)) (i32.sub (i32.const 0) (local.get $e))
      (select (i32.const 2) (i32.const 1) (i32.le_s (local.get $e) (i32.const -10))) (i32.const 0)))

  ;; Values $from .. of the $count float32 at $in, written at $out as writeFloat32Of writes them,
  ;; a comma between two: up to the first that float32s writes otherwise (an integer, NaN or an
  ;; infinity, a value equal to the one before it, or one writeFloat32Of refuses). Returns that
  ;; value's index ($count when none), $end after the text.
  (func (export "write_f32s") (param $in i32) (param $from i32) (param $count i32) (param $out i32) (result i32)
    (local $i i32) (local $v f32) (local $previous f32) (local $at i32) (local $next i32)
    (local.set $i (local.get $from))
    (local.set $at (local.get $out))
    (block $stop
      (loop $values
        (br_if $stop (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $v (f32.load (i32.add (local.get $in) (i32.shl (local.get $i) (i32.const 2)))))
        (br_if $stop (f32.eq (f32.trunc (local.get $v)) (local.get $v)))
        (if (i32.gt_u (local.get $i) (local.get $from))
          (then
            (br_if $stop (f32.eq (local.get $v) (local.get $previous)))
            (i32.store8 (local.get $at) (i32.const 0x2c))))
        (local.set $next (call $write_one (local.get $v)
          (i32.add (local.get $at) (i32.gt_u (local.get $i) (local.get $from)))))
        (br_if $stop (i32.lt_s (local.get $next) (i32.const 0)))
        (local.set $at (local.get $next))
        (local.set $previous (local.get $v))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $values)))
    (global.set $end (local.get $at))
    (local.get $i)))
