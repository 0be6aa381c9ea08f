;; Finds where a JSON container ends, validating every byte of it as the scanner in tenant-view.ts does: the
;; rewriter's way past the containers it neither edits nor looks into. Assembled by lib/assemble-wasm.ts.
;;
;; Also searches those bytes for a needle (find).
;;
;; Memory: [0, 256) the class of each byte outside strings, [256, 512) bit 1 for hex digits and bit 2 for the
;; letters of simple escapes (both filled by json-skip.ts), [512, 1024) a needle; the bytes to scan from 1024 on.
(module
  (memory (export "memory") 1)

  ;; The index after the escape at $i (a backslash), -1 when it is not one JSON allows, -2 when the bytes end
  ;; inside it: \" \\ \/ \b \f \n \r \t, or \u and four hex digits.
  (func $escapeEnd (param $i i32) (param $end i32) (result i32)
    (local $c i32)
    (if (i32.ge_u (i32.add (local.get $i) (i32.const 1)) (local.get $end)) (then (return (i32.const -2))))
    (local.set $c (i32.load8_u offset=1 (local.get $i)))
    (if (i32.eq (local.get $c) (i32.const 0x75))
      (then
        (if (i32.gt_u (i32.add (local.get $i) (i32.const 6)) (local.get $end)) (then (return (i32.const -2))))
        (if (i32.eqz
              (i32.and
                (i32.and
                  (i32.load8_u offset=256 (i32.load8_u offset=2 (local.get $i)))
                  (i32.load8_u offset=256 (i32.load8_u offset=3 (local.get $i))))
                (i32.and
                  (i32.and
                    (i32.load8_u offset=256 (i32.load8_u offset=4 (local.get $i)))
                    (i32.load8_u offset=256 (i32.load8_u offset=5 (local.get $i))))
                  (i32.const 1))))
          (then (return (i32.const -1))))
        (return (i32.add (local.get $i) (i32.const 6)))))
    (if (i32.eqz (i32.and (i32.load8_u offset=256 (local.get $c)) (i32.const 2))) (then (return (i32.const -1))))
    (i32.add (local.get $i) (i32.const 2)))

  ;; The closing quote of a string from $i (inside its body), -1 when the body is malformed (a control byte, a bad
  ;; escape), -2 when the bytes end first. Byte by byte: for the last bytes before $end, where 16 do not fit.
  (func $stringEnd (param $i i32) (param $end i32) (result i32)
    (local $c i32)
    (loop $next
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -2))))
      (local.set $c (i32.load8_u (local.get $i)))
      (if (i32.eq (local.get $c) (i32.const 0x22)) (then (return (local.get $i))))
      (if (i32.lt_u (local.get $c) (i32.const 0x20)) (then (return (i32.const -1))))
      (if (i32.ne (local.get $c) (i32.const 0x5c))
        (then
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $next)))
      (local.set $i (call $escapeEnd (local.get $i) (local.get $end)))
      (br_if $next (i32.ge_s (local.get $i) (i32.const 0)))
      (return (local.get $i)))
    (unreachable))

  (func $digitsEnd (param $i i32) (param $end i32) (result i32)
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (br_if $done (i32.gt_u (i32.sub (i32.load8_u (local.get $i)) (i32.const 0x30)) (i32.const 9)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $more)))
    (local.get $i))

  ;; The end of the number at $i, -1 when it is malformed, -2 when the bytes end before it does (a number's end is
  ;; known only at the byte after it).
  (func $numberEnd (param $i i32) (param $end i32) (result i32)
    (local $c i32) (local $digits i32)
    (if (i32.eq (i32.load8_u (local.get $i)) (i32.const 0x2d)) (then (local.set $i (i32.add (local.get $i) (i32.const 1)))))
    (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -2))))
    (local.set $c (i32.load8_u (local.get $i)))
    (if (i32.eq (local.get $c) (i32.const 0x30))
      (then (local.set $i (i32.add (local.get $i) (i32.const 1))))
      (else
        (if (i32.gt_u (i32.sub (local.get $c) (i32.const 0x31)) (i32.const 8)) (then (return (i32.const -1))))
        (local.set $i (call $digitsEnd (i32.add (local.get $i) (i32.const 1)) (local.get $end)))))
    (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -2))))
    (local.set $c (i32.load8_u (local.get $i)))
    (if (i32.eq (local.get $c) (i32.const 0x2e))
      (then
        (local.set $digits (i32.add (local.get $i) (i32.const 1)))
        (local.set $i (call $digitsEnd (local.get $digits) (local.get $end)))
        (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -2))))
        (if (i32.eq (local.get $i) (local.get $digits)) (then (return (i32.const -1))))
        (local.set $c (i32.load8_u (local.get $i)))))
    (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x65))
      (then
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -2))))
        (local.set $c (i32.load8_u (local.get $i)))
        (if (i32.or (i32.eq (local.get $c) (i32.const 0x2b)) (i32.eq (local.get $c) (i32.const 0x2d)))
          (then (local.set $i (i32.add (local.get $i) (i32.const 1)))))
        (local.set $digits (local.get $i))
        (local.set $i (call $digitsEnd (local.get $i) (local.get $end)))
        (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -2))))
        (if (i32.eq (local.get $i) (local.get $digits)) (then (return (i32.const -1))))))
    (local.get $i))

  ;; skip($pos, $end), with $pos at '{' or '[': the index after the bracket that closes it, when every byte up to
  ;; there is valid JSON. Otherwise -1 - stop, where stop is the token where it gave up: the first malformed one,
  ;; the 64th nested bracket (the stack is one i64, a bit per level: 1 for an array), or $end.
  ;;
  ;; $expect, as in the JavaScript scanner: 0 a value, 1 a value or ']', 2 a key, 3 a key or '}', 4 ':', 5 ',' or
  ;; a closing bracket.
  (func (export "skip") (param $pos i32) (param $end i32) (result i32)
    (local $depth i32) (local $stack i64) (local $expect i32) (local $at i32) (local $mask i32) (local $v v128)
    (block $stop
      (loop $next
        (br_if $stop (i32.ge_u (local.get $pos) (local.get $end)))
        (block $closed
        (block $invalid
        (block $null (block $false (block $true (block $number
        (block $closeArray (block $closeObject (block $openArray (block $openObject
        (block $colon (block $comma (block $quote (block $space
          ;; the byte classes, in json-skip.ts's order
          (br_table $invalid $space $quote $comma $colon $openObject $openArray $closeObject $closeArray $number $true $false $null $invalid
            (i32.load8_u (i32.load8_u (local.get $pos)))))
        ;; space
          (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
          (br $next))
        ;; quote: a string, and the runs of "key":"value", and "value","value" after it in one turn (most of an
        ;; object's bytes are in strings of a few bytes)
          (br_if $invalid (i32.ge_u (local.get $expect) (i32.const 4)))
          (loop $string
            (local.set $at (i32.add (local.get $pos) (i32.const 1)))
            (block $quoteFound
              (loop $plain
                ;; 16 bytes at a time while they lie before $end: the first quote, backslash or control byte
                (if (i32.le_u (i32.add (local.get $at) (i32.const 16)) (local.get $end))
                  (then
                    (local.set $v (v128.load (local.get $at)))
                    (local.set $mask
                      (i8x16.bitmask
                        (v128.or
                          (v128.or
                            (i8x16.eq (local.get $v) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                            (i8x16.eq (local.get $v) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
                          (i8x16.lt_u (local.get $v) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20)))))
                    (if (i32.eqz (local.get $mask))
                      (then
                        (local.set $at (i32.add (local.get $at) (i32.const 16)))
                        (br $plain)))
                    (local.set $at (i32.add (local.get $at) (i32.ctz (local.get $mask))))
                    (br_if $quoteFound (i32.eq (i32.load8_u (local.get $at)) (i32.const 0x22)))
                    ;; an escape (the 16-byte steps go on after it; kubectl's last-applied-configuration is full
                    ;; of them), or a control byte
                    (if (i32.eq (i32.load8_u (local.get $at)) (i32.const 0x5c))
                      (then
                        (local.set $at (call $escapeEnd (local.get $at) (local.get $end)))
                        (br_if $plain (i32.ge_s (local.get $at) (i32.const 0)))
                        (br_if $stop (i32.eq (local.get $at) (i32.const -2)))
                        (br $invalid)))
                    (br $invalid)))
                ;; the string's last bytes near $end
                (local.set $at (call $stringEnd (local.get $at) (local.get $end)))
                (br_if $quoteFound (i32.ge_s (local.get $at) (i32.const 0)))
                (br_if $stop (i32.eq (local.get $at) (i32.const -2)))
                (br $invalid)))
            (local.set $pos (i32.add (local.get $at) (i32.const 1)))
            (if (i32.ge_u (local.get $expect) (i32.const 2))
              (then
                ;; a key: its ':', then a string value at once
                (local.set $expect (i32.const 4))
                (br_if $next (i32.ge_u (i32.add (local.get $pos) (i32.const 1)) (local.get $end)))
                (br_if $next (i32.ne (i32.load8_u (local.get $pos)) (i32.const 0x3a)))
                (local.set $expect (i32.const 0))
                (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
                (br_if $string (i32.eq (i32.load8_u (local.get $pos)) (i32.const 0x22)))
                (br $next)))
            ;; a value: its ',', then a string key or element at once
            (local.set $expect (i32.const 5))
            (br_if $next (i32.ge_u (i32.add (local.get $pos) (i32.const 1)) (local.get $end)))
            (br_if $next (i32.ne (i32.load8_u (local.get $pos)) (i32.const 0x2c)))
            (local.set $expect (select (i32.const 0) (i32.const 2) (i32.wrap_i64 (i64.and (local.get $stack) (i64.const 1)))))
            (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
            (br_if $string (i32.eq (i32.load8_u (local.get $pos)) (i32.const 0x22)))
            (br $next)))
        ;; comma
          (br_if $invalid (i32.ne (local.get $expect) (i32.const 5)))
          (local.set $expect (select (i32.const 0) (i32.const 2) (i32.wrap_i64 (i64.and (local.get $stack) (i64.const 1)))))
          (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
          (br $next))
        ;; colon
          (br_if $invalid (i32.ne (local.get $expect) (i32.const 4)))
          (local.set $expect (i32.const 0))
          (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
          (br $next))
        ;; openObject
          (br_if $invalid (i32.ge_u (local.get $expect) (i32.const 2)))
          (br_if $invalid (i32.eq (local.get $depth) (i32.const 63)))
          (local.set $stack (i64.shl (local.get $stack) (i64.const 1)))
          (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
          (local.set $expect (i32.const 3))
          (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
          (br $next))
        ;; openArray
          (br_if $invalid (i32.ge_u (local.get $expect) (i32.const 2)))
          (br_if $invalid (i32.eq (local.get $depth) (i32.const 63)))
          (local.set $stack (i64.or (i64.shl (local.get $stack) (i64.const 1)) (i64.const 1)))
          (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
          (local.set $expect (i32.const 1))
          (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
          (br $next))
        ;; closeObject: after a value, or right after '{'
          (br_if $invalid (i32.eqz (local.get $depth)))
          (br_if $invalid (i32.wrap_i64 (i64.and (local.get $stack) (i64.const 1))))
          (br_if $invalid (i32.and (i32.ne (local.get $expect) (i32.const 5)) (i32.ne (local.get $expect) (i32.const 3))))
          (br $closed))
        ;; closeArray: after a value, or right after '['
          (br_if $invalid (i32.eqz (local.get $depth)))
          (br_if $invalid (i32.eqz (i32.wrap_i64 (i64.and (local.get $stack) (i64.const 1)))))
          (br_if $invalid (i32.and (i32.ne (local.get $expect) (i32.const 5)) (i32.ne (local.get $expect) (i32.const 1))))
          (br $closed))
        ;; number
          (br_if $invalid (i32.ge_u (local.get $expect) (i32.const 2)))
          (local.set $at (call $numberEnd (local.get $pos) (local.get $end)))
          (br_if $stop (i32.eq (local.get $at) (i32.const -2)))
          (br_if $invalid (i32.lt_s (local.get $at) (i32.const 0)))
          (local.set $pos (local.get $at))
          (local.set $expect (i32.const 5))
          (br $next))
        ;; true (little-endian "true")
          (br_if $invalid (i32.ge_u (local.get $expect) (i32.const 2)))
          (br_if $stop (i32.gt_u (i32.add (local.get $pos) (i32.const 4)) (local.get $end)))
          (br_if $invalid (i32.ne (i32.load (local.get $pos)) (i32.const 0x65757274)))
          (local.set $pos (i32.add (local.get $pos) (i32.const 4)))
          (local.set $expect (i32.const 5))
          (br $next))
        ;; false ("alse" after the f)
          (br_if $invalid (i32.ge_u (local.get $expect) (i32.const 2)))
          (br_if $stop (i32.gt_u (i32.add (local.get $pos) (i32.const 5)) (local.get $end)))
          (br_if $invalid (i32.ne (i32.load offset=1 (local.get $pos)) (i32.const 0x65736c61)))
          (local.set $pos (i32.add (local.get $pos) (i32.const 5)))
          (local.set $expect (i32.const 5))
          (br $next))
        ;; null
          (br_if $invalid (i32.ge_u (local.get $expect) (i32.const 2)))
          (br_if $stop (i32.gt_u (i32.add (local.get $pos) (i32.const 4)) (local.get $end)))
          (br_if $invalid (i32.ne (i32.load (local.get $pos)) (i32.const 0x6c6c756e)))
          (local.set $pos (i32.add (local.get $pos) (i32.const 4)))
          (local.set $expect (i32.const 5))
          (br $next))
        ;; invalid: the token at $pos
        (return (i32.sub (i32.const -1) (local.get $pos))))
        ;; closed
        (local.set $stack (i64.shr_u (local.get $stack) (i64.const 1)))
        (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
        (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
        (if (i32.eqz (local.get $depth)) (then (return (local.get $pos))))
        (local.set $expect (i32.const 5))
        (br $next)))
    ;; the bytes end first
    (i32.sub (i32.const -1) (local.get $end)))

  ;; find($from, $to, $length): the first index from $from at which the needle (the $length bytes at 512) stands
  ;; wholly before $to, or -1. Candidates are where the needle's first and last bytes both match, 16 starts at a
  ;; time; each is then compared whole.
  (func (export "find") (param $from i32) (param $to i32) (param $length i32) (result i32)
    (local $first v128) (local $last v128) (local $mask i32) (local $at i32) (local $lastStart i32) (local $step i32)
    (local.set $first (i8x16.splat (i32.load8_u (i32.const 512))))
    (local.set $last (i8x16.splat (i32.load8_u offset=511 (local.get $length))))
    (local.set $lastStart (i32.sub (local.get $to) (local.get $length)))
    (block $none
      (loop $starts
        (br_if $none (i32.gt_s (local.get $from) (local.get $lastStart)))
        (if (i32.le_s (i32.add (local.get $from) (i32.const 15)) (local.get $lastStart))
          (then
            ;; both loads end at or before $to
            (local.set $mask
              (i8x16.bitmask
                (v128.and
                  (i8x16.eq (v128.load (local.get $from)) (local.get $first))
                  (i8x16.eq (v128.load offset=0 (i32.add (local.get $from) (i32.sub (local.get $length) (i32.const 1)))) (local.get $last)))))
            (local.set $step (i32.const 16)))
          (else
            (local.set $mask
              (i32.and
                (i32.eq (i32.load8_u (local.get $from)) (i32.load8_u (i32.const 512)))
                (i32.eq (i32.load8_u (i32.add (local.get $from) (i32.sub (local.get $length) (i32.const 1)))) (i32.load8_u offset=511 (local.get $length)))))
            (local.set $step (i32.const 1))))
        (loop $candidates
          (if (local.get $mask)
            (then
              (local.set $at (i32.add (local.get $from) (i32.ctz (local.get $mask))))
              (if (call $needleAt (local.get $at) (local.get $length)) (then (return (local.get $at))))
              (local.set $mask (i32.and (local.get $mask) (i32.sub (local.get $mask) (i32.const 1))))
              (br $candidates))))
        (local.set $from (i32.add (local.get $from) (local.get $step)))
        (br $starts)))
    (i32.const -1))

  (func $needleAt (param $at i32) (param $length i32) (result i32)
    (local $k i32)
    (block $differs
      (loop $next
        (if (i32.ge_u (local.get $k) (local.get $length)) (then (return (i32.const 1))))
        (br_if $differs (i32.ne (i32.load8_u (i32.add (local.get $at) (local.get $k))) (i32.load8_u offset=512 (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    (i32.const 0))
)
