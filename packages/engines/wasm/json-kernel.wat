;; The hot loops of http/json-bytes-reader.ts over a reply copied into this module's memory
;; (src/http/json-kernel.ts): skipping vLLM's per-token arrays (`top_logprobs`, `tokens`,
;; `text_offset`) and reading arrays of float32 logprobs and of int32 ids. Each function reads
;; only the plainest form of its array — no whitespace, no escape in a string, at most 19
;; significant digits and an exponent within ±22 in a number — and returns -1 for anything else,
;; leaving that array to the JavaScript reader, which then reads it (or refuses it) as it always
;; has. So what this module accepts, it accepts with the JavaScript reader's answer, and it never
;; refuses on its own: src/http/json-kernel.test.ts checks both against the JavaScript loops.
;;
;; Memory contract (kept by json-kernel.ts): bytes [0, 256) hold the constants below; the reply's
;; bytes are followed by at least 16 zero bytes, so a load of 8 bytes at any offset the loops reach
;; stays inside the reply's padding, and a zero byte ends every loop (no array, number, string or
;; literal holds a raw zero byte). Offsets in and out are absolute (the caller adds its base).
;;     0 .. 184  10^0 .. 10^22 as f64 (each exact)
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
      (br_if $powers (i32.le_u (local.get $k) (i32.const 22)))))
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

  ;; A string from its opening quote at $p without escapes or control bytes: the offset after its
  ;; closing quote, or -1. Eight bytes at a time: a byte equal to a quote or a backslash (XOR makes
  ;; it zero) or below 0x20 leaves the borrow of a subtraction in its top bit; a borrow out of a
  ;; flagged byte may flag the bytes above it too, never one below, so the lowest flagged byte is
  ;; the first quote, backslash or control byte.
  (func $string_end (param $p i32) (result i32)
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
    (local.set $p (i32.add (local.get $p) (i32.wrap_i64 (i64.shr_u (i64.ctz (local.get $flags)) (i64.const 3)))))
    (if (result i32) (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x22))
      (then (i32.add (local.get $p) (i32.const 1)))
      (else (i32.const -1))))

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
    (local.get $count)))
