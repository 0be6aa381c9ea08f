;; Finds where a JSON container ends, validating every byte of it as the scanner in json-tokens.ts does: the
;; rewriter's way past the containers it neither edits nor looks into. Assembled by lib/assemble-wasm.ts.
;;
;; Also walks a list item or watch object whole (item), noting where the members the rewriter looks at stand, and
;; searches bytes for a needle (find).
;;
;; Memory: [0, 256) the class of each byte outside strings, [256, 512) bit 1 for hex digits and bit 2 for the
;; letters of simple escapes (both filled by json-skip.ts), [512, 1024) a needle, [1024, 1536) the keys item()
;; looks for, [1536, 2048) what item() found; the bytes to scan from 2048 on.
(module
  (memory (export "memory") 1)
  ;; Whether the last string $stringClose scanned held an escape.
  (global $escaped (mut i32) (i32.const 0))

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
  (func $skip (export "skip") (param $pos i32) (param $end i32) (result i32)
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

;; item($pos, $end), with $pos at the '{' of a list item or a watch event's object: the index after its '}', when
  ;; every byte up to there is valid JSON and no key the walk compares holds an escape. Otherwise -1 (the JavaScript
  ;; scanner walks the item itself: malformed bytes, escaped keys, nesting past 63, more than 16 marked members) or
  ;; -2 (the bytes end first).
  ;;
  ;; Keys (at 1024): for each level (1 item, 2 its metadata, 3 metadata.labels, 4 spec, 5 status), the i32 at
  ;; 1024 + 4 * level is the address of its entries: a length byte, an id byte, the key's bytes; a length of 0 ends
  ;; them. Ids: 1 metadata, 2 spec, 3 status, 4 the name field, 5 labels, 6 managedFields, 7 ownerReferences,
  ;; 8 generateName, 9 the tenant label, 10 conditions, 16 + k the spec member with markers k.
  ;;
  ;; Found (i32 at 1536 + 4 * slot): 0 a member twice (ambiguous); 1 the name field (0 missing, 1 a string, 2 not a
  ;; string), 2-3 its value, 4 its escapes; 5 where the labels member starts, 6 where its value ends, 7 its entries;
  ;; 8 tenant labels seen, 9 where the last starts, 10-11 its value, 12 whether a string, 13 its escapes; 14 spans
  ;; seen (bit 1 << span: 0 managedFields, 1 ownerReferences, 2 conditions, 4 generateName), 15-19 their starts,
  ;; 20-24 their ends; 25 marked members, 26 + 3m their (k, start, end); from 80 the count of each member (slot 80 +
  ;; id - 1) that may appear once.
  (func (export "item") (param $pos i32) (param $end i32) (result i32)
    (memory.fill (i32.const 1536) (i32.const 0) (i32.const 512))
    (call $object (i32.const 1) (local.get $pos) (local.get $end)))

  ;; The members of the object at $pos ('{') at a level of item(): the index after its '}', or -1 or -2 as item().
  (func $object (param $level i32) (param $pos i32) (param $end i32) (result i32)
    (local $keyStart i32) (local $keyClose i32) (local $id i32) (local $after i32) (local $c i32)
    (local.set $pos (call $space (i32.add (local.get $pos) (i32.const 1)) (local.get $end)))
    (if (i32.ge_u (local.get $pos) (local.get $end)) (then (return (i32.const -2))))
    (if (i32.eq (i32.load8_u (local.get $pos)) (i32.const 0x7d)) (then (return (i32.add (local.get $pos) (i32.const 1)))))
    (loop $member
      (if (i32.ne (i32.load8_u (local.get $pos)) (i32.const 0x22)) (then (return (i32.const -1))))
      (local.set $keyStart (local.get $pos))
      (local.set $keyClose (call $stringClose (local.get $pos) (local.get $end)))
      (if (i32.lt_s (local.get $keyClose) (i32.const 0)) (then (return (local.get $keyClose))))
      ;; an escaped key: the JavaScript scanner decodes it
      (if (global.get $escaped) (then (return (i32.const -1))))
      (local.set $id (call $keyId (local.get $level) (i32.add (local.get $keyStart) (i32.const 1)) (local.get $keyClose)))
      ;; every key of the labels counts: the tenant label alone is removed with the whole map
      (if (i32.eq (local.get $level) (i32.const 3))
        (then (i32.store offset=1564 (i32.const 0) (i32.add (i32.load offset=1564 (i32.const 0)) (i32.const 1)))))
      (local.set $pos (call $space (i32.add (local.get $keyClose) (i32.const 1)) (local.get $end)))
      (if (i32.ge_u (local.get $pos) (local.get $end)) (then (return (i32.const -2))))
      (if (i32.ne (i32.load8_u (local.get $pos)) (i32.const 0x3a)) (then (return (i32.const -1))))
      (local.set $pos (call $space (i32.add (local.get $pos) (i32.const 1)) (local.get $end)))
      (if (i32.ge_u (local.get $pos) (local.get $end)) (then (return (i32.const -2))))
      (local.set $after
        (if (result i32) (local.get $id)
          (then (call $member (local.get $id) (local.get $keyStart) (local.get $pos) (local.get $end)))
          (else (call $value (local.get $pos) (local.get $end)))))
      (if (i32.lt_s (local.get $after) (i32.const 0)) (then (return (local.get $after))))
      (local.set $pos (call $space (local.get $after) (local.get $end)))
      (if (i32.ge_u (local.get $pos) (local.get $end)) (then (return (i32.const -2))))
      (local.set $c (i32.load8_u (local.get $pos)))
      (if (i32.eq (local.get $c) (i32.const 0x7d)) (then (return (i32.add (local.get $pos) (i32.const 1)))))
      (if (i32.ne (local.get $c) (i32.const 0x2c)) (then (return (i32.const -1))))
      (local.set $pos (call $space (i32.add (local.get $pos) (i32.const 1)) (local.get $end)))
      (if (i32.ge_u (local.get $pos) (local.get $end)) (then (return (i32.const -2))))
      (br $member))
    (unreachable))

  ;; The value at $pos of a member the walk looks for (its $id, its key at $keyStart): noted, and walked into when
  ;; its object has members to look for. Returns the index after it, or -1 or -2 as item().
  (func $member (param $id i32) (param $keyStart i32) (param $pos i32) (param $end i32) (result i32)
    (local $c i32) (local $after i32) (local $m i32) (local $container i32)
    (local.set $c (i32.load8_u (local.get $pos)))
    (local.set $container (i32.or (i32.eq (local.get $c) (i32.const 0x7b)) (i32.eq (local.get $c) (i32.const 0x5b))))
    (if (i32.ge_u (local.get $id) (i32.const 16))
      (then
        ;; a spec member whose markers the JavaScript side searches for, once the item is whole (a string too: a
        ;; pod's priorityClassName)
        (local.set $after (call $value (local.get $pos) (local.get $end)))
        (if (i32.lt_s (local.get $after) (i32.const 0)) (then (return (local.get $after))))
        (local.set $m (i32.load offset=1636 (i32.const 0)))
        (if (i32.eq (local.get $m) (i32.const 16)) (then (return (i32.const -1))))
        (local.set $m (i32.add (i32.const 1640) (i32.mul (local.get $m) (i32.const 12))))
        (i32.store (local.get $m) (i32.sub (local.get $id) (i32.const 16)))
        (i32.store offset=4 (local.get $m) (local.get $pos))
        (i32.store offset=8 (local.get $m) (local.get $after))
        (i32.store offset=1636 (i32.const 0) (i32.add (i32.load offset=1636 (i32.const 0)) (i32.const 1)))
        (return (local.get $after))))
    ;; the tenant label's count is slot 8, the others' from slot 80
    (call $count (select (i32.const 1568) (i32.add (i32.const 1852) (i32.shl (local.get $id) (i32.const 2))) (i32.eq (local.get $id) (i32.const 9))))
    (block $conditions (block $tenantLabel (block $generateName (block $owners (block $managedFields (block $labels
    (block $name (block $status (block $spec (block $metadata
      (br_table $metadata $spec $status $name $labels $managedFields $owners $generateName $tenantLabel $conditions $conditions
        (i32.sub (local.get $id) (i32.const 1))))
    ;; metadata
      (if (i32.eq (local.get $c) (i32.const 0x7b)) (then (return (call $object (i32.const 2) (local.get $pos) (local.get $end)))))
      (return (call $value (local.get $pos) (local.get $end))))
    ;; spec: walked into only when some of its members have markers
      (if (i32.and (i32.eq (local.get $c) (i32.const 0x7b)) (i32.ne (i32.load8_u (i32.load offset=1040 (i32.const 0))) (i32.const 0)))
        (then (return (call $object (i32.const 4) (local.get $pos) (local.get $end)))))
      (return (call $value (local.get $pos) (local.get $end))))
    ;; status
      (if (i32.eq (local.get $c) (i32.const 0x7b)) (then (return (call $object (i32.const 5) (local.get $pos) (local.get $end)))))
      (return (call $value (local.get $pos) (local.get $end))))
    ;; name
      (if (i32.ne (local.get $c) (i32.const 0x22))
        (then
          (i32.store offset=1540 (i32.const 0) (i32.const 2))
          (return (call $value (local.get $pos) (local.get $end)))))
      (local.set $after (call $stringClose (local.get $pos) (local.get $end)))
      (if (i32.lt_s (local.get $after) (i32.const 0)) (then (return (local.get $after))))
      (local.set $after (i32.add (local.get $after) (i32.const 1)))
      (i32.store offset=1540 (i32.const 0) (i32.const 1))
      (i32.store offset=1544 (i32.const 0) (local.get $pos))
      (i32.store offset=1548 (i32.const 0) (local.get $after))
      (i32.store offset=1552 (i32.const 0) (global.get $escaped))
      (return (local.get $after)))
    ;; labels
      (i32.store offset=1556 (i32.const 0) (local.get $keyStart))
      (if (i32.ne (local.get $c) (i32.const 0x7b)) (then (return (call $value (local.get $pos) (local.get $end)))))
      (local.set $after (call $object (i32.const 3) (local.get $pos) (local.get $end)))
      (i32.store offset=1560 (i32.const 0) (local.get $after))
      (return (local.get $after)))
    ;; managedFields: an array
      (local.set $after (call $value (local.get $pos) (local.get $end)))
      (if (i32.and (i32.ge_s (local.get $after) (i32.const 0)) (i32.eq (local.get $c) (i32.const 0x5b)))
        (then (call $span (i32.const 0) (local.get $pos) (local.get $after))))
      (return (local.get $after)))
    ;; ownerReferences: an array
      (local.set $after (call $value (local.get $pos) (local.get $end)))
      (if (i32.and (i32.ge_s (local.get $after) (i32.const 0)) (i32.eq (local.get $c) (i32.const 0x5b)))
        (then (call $span (i32.const 1) (local.get $pos) (local.get $after))))
      (return (local.get $after)))
    ;; generateName: any value
      (local.set $after (call $value (local.get $pos) (local.get $end)))
      (if (i32.ge_s (local.get $after) (i32.const 0)) (then (call $span (i32.const 4) (local.get $pos) (local.get $after))))
      (return (local.get $after)))
    ;; the tenant label: its value when a string, a number or a literal
      (i32.store offset=1572 (i32.const 0) (local.get $keyStart))
      (i32.store offset=1584 (i32.const 0) (i32.const 0))
      (local.set $after (call $value (local.get $pos) (local.get $end)))
      (if (i32.or (i32.lt_s (local.get $after) (i32.const 0)) (local.get $container)) (then (return (local.get $after))))
      (i32.store offset=1576 (i32.const 0) (local.get $pos))
      (i32.store offset=1580 (i32.const 0) (local.get $after))
      (i32.store offset=1584 (i32.const 0) (i32.eq (local.get $c) (i32.const 0x22)))
      (i32.store offset=1588 (i32.const 0) (i32.and (global.get $escaped) (i32.eq (local.get $c) (i32.const 0x22))))
      (return (local.get $after)))
    ;; conditions: an array or an object
    (local.set $after (call $value (local.get $pos) (local.get $end)))
    (if (i32.and (i32.ge_s (local.get $after) (i32.const 0)) (local.get $container))
      (then (call $span (i32.const 2) (local.get $pos) (local.get $after))))
    (local.get $after))

  ;; One more of a member that may appear once (its count at $at): a second makes the item ambiguous.
  (func $count (param $at i32)
    (local $n i32)
    (local.set $n (i32.add (i32.load (local.get $at)) (i32.const 1)))
    (i32.store (local.get $at) (local.get $n))
    (if (i32.gt_u (local.get $n) (i32.const 1)) (then (i32.store offset=1536 (i32.const 0) (i32.const 1)))))

  (func $span (param $span i32) (param $from i32) (param $to i32)
    (i32.store offset=1596 (i32.shl (local.get $span) (i32.const 2)) (local.get $from))
    (i32.store offset=1616 (i32.shl (local.get $span) (i32.const 2)) (local.get $to))
    (i32.store offset=1592 (i32.const 0) (i32.or (i32.load offset=1592 (i32.const 0)) (i32.shl (i32.const 1) (local.get $span)))))

  ;; The id of the key [$from, $to) at a level of item(), 0 when the walk does not look for it.
  (func $keyId (param $level i32) (param $from i32) (param $to i32) (result i32)
    (local $entry i32) (local $length i32) (local $k i32)
    (local.set $entry (i32.load offset=1024 (i32.shl (local.get $level) (i32.const 2))))
    (loop $entries
      (local.set $length (i32.load8_u (local.get $entry)))
      (if (i32.eqz (local.get $length)) (then (return (i32.const 0))))
      (if (i32.eq (local.get $length) (i32.sub (local.get $to) (local.get $from)))
        (then
          (local.set $k (i32.const 0))
          (block $differs
            (loop $bytes
              (if (i32.eq (local.get $k) (local.get $length)) (then (return (i32.load8_u offset=1 (local.get $entry)))))
              (br_if $differs
                (i32.ne (i32.load8_u offset=2 (i32.add (local.get $entry) (local.get $k))) (i32.load8_u (i32.add (local.get $from) (local.get $k)))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $bytes)))))
      (local.set $entry (i32.add (local.get $entry) (i32.add (local.get $length) (i32.const 2))))
      (br $entries))
    (unreachable))

  ;; The first byte from $pos that is not whitespace, or $end.
  (func $space (param $pos i32) (param $end i32) (result i32)
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $pos) (local.get $end)))
        (br_if $done (i32.ne (i32.load8_u (i32.load8_u (local.get $pos))) (i32.const 1)))
        (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
        (br $more)))
    (local.get $pos))

  ;; The index after the value at $pos, or -1 (malformed, or nested past 63) or -2 (the bytes end first).
  (func $value (param $pos i32) (param $end i32) (result i32)
    (local $c i32) (local $after i32)
    (local.set $c (i32.load8_u (local.get $pos)))
    (if (i32.eq (local.get $c) (i32.const 0x22))
      (then
        (local.set $after (call $stringClose (local.get $pos) (local.get $end)))
        (return (select (local.get $after) (i32.add (local.get $after) (i32.const 1)) (i32.lt_s (local.get $after) (i32.const 0))))))
    (if (i32.or (i32.eq (local.get $c) (i32.const 0x7b)) (i32.eq (local.get $c) (i32.const 0x5b)))
      (then
        (local.set $after (call $skip (local.get $pos) (local.get $end)))
        (if (i32.ge_s (local.get $after) (i32.const 0)) (then (return (local.get $after))))
        ;; skip stopped at -1 - $after
        (return (select (i32.const -2) (i32.const -1) (i32.ge_u (i32.sub (i32.const -1) (local.get $after)) (local.get $end))))))
    (local.set $c (i32.load8_u (local.get $c)))
    (if (i32.eq (local.get $c) (i32.const 9)) (then (return (call $numberEnd (local.get $pos) (local.get $end)))))
    (if (i32.eq (local.get $c) (i32.const 10))
      (then
        (if (i32.gt_u (i32.add (local.get $pos) (i32.const 4)) (local.get $end)) (then (return (i32.const -2))))
        (return (select (i32.add (local.get $pos) (i32.const 4)) (i32.const -1) (i32.eq (i32.load (local.get $pos)) (i32.const 0x65757274))))))
    (if (i32.eq (local.get $c) (i32.const 11))
      (then
        (if (i32.gt_u (i32.add (local.get $pos) (i32.const 5)) (local.get $end)) (then (return (i32.const -2))))
        (return (select (i32.add (local.get $pos) (i32.const 5)) (i32.const -1) (i32.eq (i32.load offset=1 (local.get $pos)) (i32.const 0x65736c61))))))
    (if (i32.eq (local.get $c) (i32.const 12))
      (then
        (if (i32.gt_u (i32.add (local.get $pos) (i32.const 4)) (local.get $end)) (then (return (i32.const -2))))
        (return (select (i32.add (local.get $pos) (i32.const 4)) (i32.const -1) (i32.eq (i32.load (local.get $pos)) (i32.const 0x6c6c756e))))))
    (i32.const -1))

  ;; The closing quote of the string whose opening quote is at $pos, or -1 (a control byte, a bad escape) or -2 (the
  ;; bytes end first); $escaped says whether it held an escape.
  (func $stringClose (param $pos i32) (param $end i32) (result i32)
    (local $at i32) (local $mask i32) (local $v v128)
    (global.set $escaped (i32.const 0))
    (local.set $at (i32.add (local.get $pos) (i32.const 1)))
    (loop $plain
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
          (if (i32.eq (i32.load8_u (local.get $at)) (i32.const 0x22)) (then (return (local.get $at))))
          (if (i32.ne (i32.load8_u (local.get $at)) (i32.const 0x5c)) (then (return (i32.const -1))))
          (global.set $escaped (i32.const 1))
          (local.set $at (call $escapeEnd (local.get $at) (local.get $end)))
          (br_if $plain (i32.ge_s (local.get $at) (i32.const 0)))
          (return (local.get $at)))))
    ;; the last bytes before $end
    (local.set $mask (call $stringEnd (local.get $at) (local.get $end)))
    (if (i32.lt_s (local.get $mask) (i32.const 0)) (then (return (local.get $mask))))
    ;; $stringEnd does not say whether it passed an escape: look back for one
    (if (call $hasBackslash (local.get $at) (local.get $mask)) (then (global.set $escaped (i32.const 1))))
    (local.get $mask))

  (func $hasBackslash (param $from i32) (param $to i32) (result i32)
    (block $none
      (loop $next
        (br_if $none (i32.ge_u (local.get $from) (local.get $to)))
        (if (i32.eq (i32.load8_u (local.get $from)) (i32.const 0x5c)) (then (return (i32.const 1))))
        (local.set $from (i32.add (local.get $from) (i32.const 1)))
        (br $next)))
    (i32.const 0))

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
