;; The per-token hot path of @anneal/rl's stepTokenMath (docs/recipe.md §2) in WebAssembly SIMD (f32x4).
;; One pass over a batch of "pieces" (a piece is a rollout, or part of one when the caller stages
;; tokens through a small buffer); for each piece it streams the train and inference logprobs once
;; and reports its sums. It writes nothing per token: the trainer's per-token advantages are set
;; before the trainer returns the logprobs this reads (src/token-advantages.ts).
;; src/step-math-wasm.ts turns those sums into the step metrics exactly as the scalar reference
;; (src/step-math.ts) does, and recomputes with the scalar reference any piece whose log-ratios are
;; outside [-80, 80], infinite or NaN (the kernel's float32 exponential is only valid inside).
;;
;; Per token, in float32, four tokens per vector:
;;   d   = logp_train - logp_infer                  (the log IS ratio; docs/recipe.md §2)
;;   r   = exp(d) = 2^n e^f, n = nearest(d / ln 2), f = d - n ln 2 (Cody-Waite, two constants)
;;   e^f = 1 + f + g,  g = f^2 q(f),  q a degree-4 fit of (e^f - 1 - f) / f^2 on |f| <= ln2 / 2
;;   k   = r - 1 - d, the k3 term of kl.ts: g when n = 0 (no cancellation)
;; A token with n = 0 adds r - 1 = f + g to the em1 sum (full relative precision of r - 1 near
;; r = 1); any other adds r to the r sum and counts itself, so Σ r = tokens - count + Σ em1 + Σ r.
;; The hot loop takes two vectors (8 tokens) at a time. When all 8 have |d| <= 0.3465 (so n = 0:
;; in practice almost always) it computes g inline, without range reduction or 2^n; otherwise it
;; calls $general per vector, which gives the same bits for such lanes. The last 0-7 tokens of a
;; piece go through $general too, one (masked) vector at a time.
;; Accuracy: r within 1.3 ulp (float32) of exp(d), g within 5 ulp; see src/step-math-wasm.test.ts.
;; Σ(r - 1), Σ d and Σ k run in float32 per lane for blocks of 16 vectors (64 tokens), then in
;; float64; $general's own sums (Σ r, counts) accumulate in memory, in float64 and int32.
;;
;; Piece results (8 f64 = 64 bytes each, at $sums + 64 p):
;;   [0] Σ (r - 1) over n = 0 tokens   [1] Σ d   [2] Σ k   [3] min d   [4] max d
;;   [5] tokens with |d| > ln 2        [6] Σ r over n != 0 tokens      [7] count of n != 0 tokens
;; min/max are over d (r is monotone in d; the caller applies Math.exp once), and "outside [0.5, 2]"
;; is |d| > ln 2, decided on d itself: the float32 constant just below ln 2 makes `|d| > c` exactly
;; `|d| > ln 2` for float32 d, matching the reference's exp(d) < 0.5 || exp(d) > 2.
;;
;; Memory contract (kept by src/step-wasm-kernel.ts): bytes [0, 512) belong to the kernel; it may
;; read up to 12 bytes past the end of a piece's logprobs, so every array it is given is followed
;; by at least 16 addressable bytes.
;;
;; Constants live in memory and are loaded where used: V8 rebuilds an inline v128.const from
;; immediates at every use (three instructions) and then spills it under register pressure.
;; Kernel bytes [0, 512):
;;     0 ABS        |x| mask               128 Q0 .. 192 Q4  coefficients of q (see $init)
;;    16 HALF_LN2   0.3465 < ln 2 / 2      208 (unused)
;;    32 LN2_BELOW  float32 just below ln 2
;;    48 LOG2E      1 / ln 2               256 general path: tokens outside [0.5, 2] (i32x4)
;;    64 MAGIC      1.5 2^23               272 general path: count of n != 0 tokens (i32x4)
;;    80 C1, 96 C2  ln 2 = C1 - C2         288, 304 general path: Σ r over n != 0, f64x2 lo / hi
;;   112 ONE        1.0, also 127 << 23, the exponent bias of 2^n
(module
  (import "env" "memory" (memory 1))

  (func $init
    (v128.store offset=0 (i32.const 0) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
    (v128.store offset=16 (i32.const 0) (v128.const f32x4 0.3465 0.3465 0.3465 0.3465))
    (v128.store offset=32 (i32.const 0) (v128.const i32x4 0x3f317217 0x3f317217 0x3f317217 0x3f317217))
    (v128.store offset=48 (i32.const 0) (v128.const f32x4 1.44269504 1.44269504 1.44269504 1.44269504))
    (v128.store offset=64 (i32.const 0) (v128.const f32x4 12582912 12582912 12582912 12582912))
    (v128.store offset=80 (i32.const 0) (v128.const f32x4 0.693359375 0.693359375 0.693359375 0.693359375))
    (v128.store offset=96 (i32.const 0) (v128.const f32x4 2.12194440e-4 2.12194440e-4 2.12194440e-4 2.12194440e-4))
    (v128.store offset=112 (i32.const 0) (v128.const f32x4 1 1 1 1))
    ;; q: min-max relative-error fit of (e^f - 1 - f) / f^2 on |f| <= 1.0005 ln 2 / 2 (error 1.3e-7)
    (v128.store offset=128 (i32.const 0) (v128.const f32x4 0.5 0.5 0.5 0.5))
    (v128.store offset=144 (i32.const 0) (v128.const f32x4 0.16666577756404877 0.16666577756404877 0.16666577756404877 0.16666577756404877))
    (v128.store offset=160 (i32.const 0) (v128.const f32x4 0.04166685417294502 0.04166685417294502 0.04166685417294502 0.04166685417294502))
    (v128.store offset=176 (i32.const 0) (v128.const f32x4 0.008363170549273491 0.008363170549273491 0.008363170549273491 0.008363170549273491))
    (v128.store offset=192 (i32.const 0) (v128.const f32x4 0.0013901286292821169 0.0013901286292821169 0.0013901286292821169 0.0013901286292821169)))
  (start $init)

  ;; $general: one vector of d (lanes past a piece's end hold 0) -> its contributions to the
  ;; Σ (r - 1) and Σ k sums; adds to the kernel's in-memory sums (bytes 256-319) itself.
  (func $general (param $d v128) (result v128 v128)
    (local $absd v128) (local $t v128) (local $nf v128) (local $nC1 v128) (local $nC2 v128)
    (local $f v128) (local $g v128) (local $fg v128) (local $scale v128) (local $isn0 v128)
    (local $r v128) (local $s1 v128)
    ;; |d| > ln 2  <=>  r outside [0.5, 2]
    (local.set $absd (v128.and (local.get $d) (v128.load offset=0 (i32.const 0))))
    (v128.store offset=256 (i32.const 0) (i32x4.sub (v128.load offset=256 (i32.const 0))
      (f32x4.gt (local.get $absd) (v128.load offset=32 (i32.const 0)))))
    ;; range reduction: t = d log2 e + 1.5 2^23 rounds n = nearest(d / ln 2) into t's low
    ;; mantissa bits; f = (d - n C1) + n C2 with C1 - C2 = ln 2 and n C1 exact
    (local.set $t (f32x4.add (f32x4.mul (local.get $d) (v128.load offset=48 (i32.const 0)))
      (v128.load offset=64 (i32.const 0))))
    (local.set $nf (f32x4.sub (local.get $t) (v128.load offset=64 (i32.const 0))))
    (local.set $nC1 (f32x4.mul (local.get $nf) (v128.load offset=80 (i32.const 0))))
    (local.set $nC2 (f32x4.mul (local.get $nf) (v128.load offset=96 (i32.const 0))))
    (local.set $f (f32x4.add (f32x4.sub (local.get $d) (local.get $nC1)) (local.get $nC2)))
    ;; g = f^2 q(f), q(f) = Q0 + f (Q1 + f (Q2 + f (Q3 + f Q4))): e^f = 1 + f + g
    (local.set $g (f32x4.mul (f32x4.mul (local.get $f) (local.get $f))
      (f32x4.add (v128.load offset=128 (i32.const 0)) (f32x4.mul (local.get $f)
        (f32x4.add (v128.load offset=144 (i32.const 0)) (f32x4.mul (local.get $f)
          (f32x4.add (v128.load offset=160 (i32.const 0)) (f32x4.mul (local.get $f)
            (f32x4.add (v128.load offset=176 (i32.const 0)) (f32x4.mul (local.get $f)
              (v128.load offset=192 (i32.const 0))))))))))))
    (local.set $fg (f32x4.add (local.get $f) (local.get $g)))
    ;; 2^n from t's bits: (t << 23) = n << 23, plus 127 << 23 (|n| <= 116 for |d| <= 80)
    (local.set $scale (i32x4.add (i32x4.shl (local.get $t) (i32.const 23))
      (v128.load offset=112 (i32.const 0))))
    (local.set $isn0 (f32x4.eq (local.get $nf) (v128.const f32x4 0 0 0 0)))
    ;; n != 0 lanes: r itself into the Σ r sum (float64, low and high lanes), and their count
    (local.set $r (v128.andnot (f32x4.mul (local.get $scale)
      (f32x4.add (v128.load offset=112 (i32.const 0)) (local.get $fg))) (local.get $isn0)))
    (v128.store offset=288 (i32.const 0) (f64x2.add (v128.load offset=288 (i32.const 0))
      (f64x2.promote_low_f32x4 (local.get $r))))
    (v128.store offset=304 (i32.const 0) (f64x2.add (v128.load offset=304 (i32.const 0))
      (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7
        (local.get $r) (local.get $r)))))
    (v128.store offset=272 (i32.const 0) (i32x4.sub (v128.load offset=272 (i32.const 0))
      (v128.not (local.get $isn0))))
    ;; r - 1 - d = g + (s1 - n ln 2) with s1 = (2^n - 1)(1 + f + g); s1 = 0 where n = 0
    (local.set $s1 (f32x4.mul (f32x4.sub (local.get $scale) (v128.load offset=112 (i32.const 0)))
      (f32x4.add (v128.load offset=112 (i32.const 0)) (local.get $fg))))
    (v128.and (local.get $fg) (local.get $isn0))  ;; r - 1 where n = 0 (else 0: r went to Σ r)
    (f32x4.add (local.get $g) (f32x4.add (f32x4.sub (local.get $s1) (local.get $nC1)) (local.get $nC2))))

  ;; scan(lt, li, bounds, sums, count)
  ;;   lt, li:      byte addresses of token 0 of this call (train, inference logprobs; f32)
  ;;   bounds:      count + 1 i32 token indices relative to token 0; piece p is [bounds[p], bounds[p+1])
  ;;   sums:        count x 8 f64, written (see above)
  (func (export "scan")
    (param $lt i32) (param $li i32) (param $bounds i32) (param $sums i32) (param $count i32)
    (local $p i32)         ;; piece index
    (local $at i32)        ;; byte offset of the next vector (relative to token 0)
    (local $end i32)       ;; byte offset one past the piece
    (local $pairsEnd i32)  ;; byte offset one past the piece's last whole pair of vectors
    (local $blockEnd i32)  ;; byte offset one past this float32 block (8 pairs at most)
    (local $rec i32)
    (local $valid v128)
    (local $d0 v128) (local $d1 v128) (local $dmm v128) (local $g0 v128) (local $g1 v128) (local $q v128)
    (local $em1 v128) (local $k v128)
    (local $em1B v128) (local $dB v128) (local $kB v128)   ;; float32 block sums
    (local $em1S v128) (local $dS v128) (local $kS v128)   ;; float64 piece sums (f64x2)
    (local $minD v128) (local $maxD v128)
    (block $allDone
      (loop $pieces
        (br_if $allDone (i32.ge_u (local.get $p) (local.get $count)))
        (local.set $at (i32.shl (i32.load (i32.add (local.get $bounds)
          (i32.shl (local.get $p) (i32.const 2)))) (i32.const 2)))
        (local.set $end (i32.shl (i32.load offset=4 (i32.add (local.get $bounds)
          (i32.shl (local.get $p) (i32.const 2)))) (i32.const 2)))
        (local.set $pairsEnd (i32.add (local.get $at)
          (i32.and (i32.sub (local.get $end) (local.get $at)) (i32.const -32))))
        (local.set $em1S (v128.const i64x2 0 0))
        (local.set $dS (v128.const i64x2 0 0))
        (local.set $kS (v128.const i64x2 0 0))
        (local.set $minD (v128.const f32x4 inf inf inf inf))
        (local.set $maxD (v128.const f32x4 -inf -inf -inf -inf))
        (v128.store offset=256 (i32.const 0) (v128.const i64x2 0 0))
        (v128.store offset=272 (i32.const 0) (v128.const i64x2 0 0))
        (v128.store offset=288 (i32.const 0) (v128.const i64x2 0 0))
        (v128.store offset=304 (i32.const 0) (v128.const i64x2 0 0))
        (block $pieceDone
          (loop $blocks
            (br_if $pieceDone (i32.ge_u (local.get $at) (local.get $end)))
            (local.set $em1B (v128.const f32x4 0 0 0 0))
            (local.set $dB (v128.const f32x4 0 0 0 0))
            (local.set $kB (v128.const f32x4 0 0 0 0))
            (block $blockFull
            (if (i32.lt_u (local.get $at) (local.get $pairsEnd))
              (then
                (local.set $blockEnd (select
                  (local.get $pairsEnd) (i32.add (local.get $at) (i32.const 256))
                  (i32.lt_u (local.get $pairsEnd) (i32.add (local.get $at) (i32.const 256)))))
                ;; whole pairs of vectors, tokens [at, at + 8): the fast loop runs until a pair
                ;; has a lane with |d| > 0.3465, which the outer loop then hands to $general
                ;; (calls stay out of the fast loop, so its sums stay in registers)
                (loop $pairs
                  (block $generalPair
                    (loop $fast
                      (local.set $d0 (f32x4.sub
                        (v128.load (i32.add (local.get $lt) (local.get $at)))
                        (v128.load (i32.add (local.get $li) (local.get $at)))))
                      (local.set $d1 (f32x4.sub
                        (v128.load offset=16 (i32.add (local.get $lt) (local.get $at)))
                        (v128.load offset=16 (i32.add (local.get $li) (local.get $at)))))
                      (local.set $q (v128.load offset=0 (i32.const 0)))  ;; |x| mask
                      (br_if $generalPair (v128.any_true (f32x4.gt
                        (f32x4.pmax (v128.and (local.get $d0) (local.get $q))
                          (v128.and (local.get $d1) (local.get $q)))
                        (v128.load offset=16 (i32.const 0)))))
                      (local.set $minD (f32x4.pmin (f32x4.pmin (local.get $minD) (local.get $d0)) (local.get $d1)))
                      (local.set $maxD (f32x4.pmax (f32x4.pmax (local.get $maxD) (local.get $d0)) (local.get $d1)))
                      (local.set $dB (f32x4.add (f32x4.add (local.get $dB) (local.get $d0)) (local.get $d1)))
                      ;; n = 0 in every lane: f = d and g = d^2 q(d) as in $general; r - 1 = d + g,
                      ;; k3 term g. Horner for both vectors, each coefficient loaded once.
                      (local.set $q (v128.load offset=192 (i32.const 0)))
                      (local.set $g0 (f32x4.mul (local.get $d0) (local.get $q)))
                      (local.set $g1 (f32x4.mul (local.get $d1) (local.get $q)))
                      (local.set $q (v128.load offset=176 (i32.const 0)))
                      (local.set $g0 (f32x4.mul (local.get $d0) (f32x4.add (local.get $q) (local.get $g0))))
                      (local.set $g1 (f32x4.mul (local.get $d1) (f32x4.add (local.get $q) (local.get $g1))))
                      (local.set $q (v128.load offset=160 (i32.const 0)))
                      (local.set $g0 (f32x4.mul (local.get $d0) (f32x4.add (local.get $q) (local.get $g0))))
                      (local.set $g1 (f32x4.mul (local.get $d1) (f32x4.add (local.get $q) (local.get $g1))))
                      (local.set $q (v128.load offset=144 (i32.const 0)))
                      (local.set $g0 (f32x4.mul (local.get $d0) (f32x4.add (local.get $q) (local.get $g0))))
                      (local.set $g1 (f32x4.mul (local.get $d1) (f32x4.add (local.get $q) (local.get $g1))))
                      (local.set $q (v128.load offset=128 (i32.const 0)))
                      (local.set $g0 (f32x4.mul (f32x4.mul (local.get $d0) (local.get $d0))
                        (f32x4.add (local.get $q) (local.get $g0))))
                      (local.set $g1 (f32x4.mul (f32x4.mul (local.get $d1) (local.get $d1))
                        (f32x4.add (local.get $q) (local.get $g1))))
                      (local.set $em1B (f32x4.add (f32x4.add (local.get $em1B)
                        (f32x4.add (local.get $d0) (local.get $g0))) (f32x4.add (local.get $d1) (local.get $g1))))
                      (local.set $kB (f32x4.add (f32x4.add (local.get $kB) (local.get $g0)) (local.get $g1)))
                      (local.set $at (i32.add (local.get $at) (i32.const 32)))
                      (br_if $fast (i32.lt_u (local.get $at) (local.get $blockEnd))))
                    (br $blockFull))
                  ;; this pair needs the general path ($d0, $d1 hold it)
                  (local.set $minD (f32x4.pmin (f32x4.pmin (local.get $minD) (local.get $d0)) (local.get $d1)))
                  (local.set $maxD (f32x4.pmax (f32x4.pmax (local.get $maxD) (local.get $d0)) (local.get $d1)))
                  (local.set $dB (f32x4.add (f32x4.add (local.get $dB) (local.get $d0)) (local.get $d1)))
                  (call $general (local.get $d0))
                  (local.set $k)
                  (local.set $em1)
                  (local.set $em1B (f32x4.add (local.get $em1B) (local.get $em1)))
                  (local.set $kB (f32x4.add (local.get $kB) (local.get $k)))
                  (call $general (local.get $d1))
                  (local.set $k)
                  (local.set $em1)
                  (local.set $em1B (f32x4.add (local.get $em1B) (local.get $em1)))
                  (local.set $kB (f32x4.add (local.get $kB) (local.get $k)))
                  (local.set $at (i32.add (local.get $at) (i32.const 32)))
                  (br_if $pairs (i32.lt_u (local.get $at) (local.get $blockEnd)))))
              (else
                ;; the piece's last 1-7 tokens, a vector at a time: lanes past the end get d = 0
                ;; (adds 0 to every sum) and NaN for min/max (pmin/pmax skip it)
                (loop $rest
                  (local.set $valid (i32x4.gt_s
                    (i32x4.splat (i32.shr_u (i32.sub (local.get $end) (local.get $at)) (i32.const 2)))
                    (v128.const i32x4 0 1 2 3)))
                  (local.set $dmm (f32x4.sub
                    (v128.load (i32.add (local.get $lt) (local.get $at)))
                    (v128.load (i32.add (local.get $li) (local.get $at)))))
                  (local.set $d0 (v128.and (local.get $dmm) (local.get $valid)))
                  (local.set $dmm (v128.or (local.get $dmm) (v128.not (local.get $valid))))
                  (local.set $minD (f32x4.pmin (local.get $minD) (local.get $dmm)))
                  (local.set $maxD (f32x4.pmax (local.get $maxD) (local.get $dmm)))
                  (local.set $dB (f32x4.add (local.get $dB) (local.get $d0)))
                  (call $general (local.get $d0))
                  (local.set $k)
                  (local.set $em1)
                  (local.set $em1B (f32x4.add (local.get $em1B) (local.get $em1)))
                  (local.set $kB (f32x4.add (local.get $kB) (local.get $k)))
                  (local.set $at (i32.add (local.get $at) (i32.const 16)))
                  (br_if $rest (i32.lt_u (local.get $at) (local.get $end)))))))
            ;; flush the float32 block sums into the float64 piece sums (low and high lanes)
            (local.set $em1S (f64x2.add (f64x2.add (local.get $em1S)
              (f64x2.promote_low_f32x4 (local.get $em1B)))
              (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7
                (local.get $em1B) (local.get $em1B)))))
            (local.set $dS (f64x2.add (f64x2.add (local.get $dS)
              (f64x2.promote_low_f32x4 (local.get $dB)))
              (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7
                (local.get $dB) (local.get $dB)))))
            (local.set $kS (f64x2.add (f64x2.add (local.get $kS)
              (f64x2.promote_low_f32x4 (local.get $kB)))
              (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7
                (local.get $kB) (local.get $kB)))))
            (br $blocks)))
        ;; the piece's record
        (local.set $rec (i32.add (local.get $sums) (i32.shl (local.get $p) (i32.const 6))))
        (f64.store offset=0 (local.get $rec) (f64.add
          (f64x2.extract_lane 0 (local.get $em1S)) (f64x2.extract_lane 1 (local.get $em1S))))
        (f64.store offset=8 (local.get $rec) (f64.add
          (f64x2.extract_lane 0 (local.get $dS)) (f64x2.extract_lane 1 (local.get $dS))))
        (f64.store offset=16 (local.get $rec) (f64.add
          (f64x2.extract_lane 0 (local.get $kS)) (f64x2.extract_lane 1 (local.get $kS))))
        (f64.store offset=24 (local.get $rec) (f64.promote_f32 (f32.min
          (f32.min (f32x4.extract_lane 0 (local.get $minD)) (f32x4.extract_lane 1 (local.get $minD)))
          (f32.min (f32x4.extract_lane 2 (local.get $minD)) (f32x4.extract_lane 3 (local.get $minD))))))
        (f64.store offset=32 (local.get $rec) (f64.promote_f32 (f32.max
          (f32.max (f32x4.extract_lane 0 (local.get $maxD)) (f32x4.extract_lane 1 (local.get $maxD)))
          (f32.max (f32x4.extract_lane 2 (local.get $maxD)) (f32x4.extract_lane 3 (local.get $maxD))))))
        (f64.store offset=40 (local.get $rec) (f64.convert_i32_u (call $laneSum (i32.const 256))))
        (f64.store offset=48 (local.get $rec) (f64.add
          (f64.add (f64.load offset=288 (i32.const 0)) (f64.load offset=296 (i32.const 0)))
          (f64.add (f64.load offset=304 (i32.const 0)) (f64.load offset=312 (i32.const 0)))))
        (f64.store offset=56 (local.get $rec) (f64.convert_i32_u (call $laneSum (i32.const 272))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $pieces))))

  ;; the sum of the four i32 lanes at $at
  (func $laneSum (param $at i32) (result i32)
    (i32.add
      (i32.add (i32.load offset=0 (local.get $at)) (i32.load offset=4 (local.get $at)))
      (i32.add (i32.load offset=8 (local.get $at)) (i32.load offset=12 (local.get $at))))))
