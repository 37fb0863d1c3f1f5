// Package libsvm reads sample data in the LIBSVM / SVMlight text format.
//
// Each line of a file is one sample (row):
//
//	label idx:val idx:val ... [# comment]
//
// where label and val are decimal floating-point numbers and idx is a 1-based
// feature index. Tokens are separated by spaces or tabs; leading and trailing
// blanks are allowed, and everything from the first '#' to the end of the
// line is ignored. A row may have no features at all (just a label). Rows
// returned to callers use 0-based indices (file index minus 1).
//
// The reader is strict, so that a broken file is reported at its first bad
// line instead of silently producing a different problem. Every line must be
// a sample: blank, whitespace-only and comment-only lines are errors, which
// keeps row number = line number − 1 and lets [ReadRange] and [CountRows]
// work on raw line counts. The following are also rejected, each with a
// [*ParseError] naming the file and line:
//
//   - a missing, malformed or non-finite (NaN, ±Inf, overflowing) label;
//   - a feature token that is not idx:val, or whose value is malformed or
//     non-finite;
//   - an index that is not a decimal integer, is < 1, or is > 2³¹−1;
//   - duplicate or descending indices within a row;
//   - SVMlight "qid:" tokens, which are not supported;
//   - lines ending in CRLF or containing a carriage return;
//   - a file with no rows at all (reported at line 0).
//
// The readers that build a matrix ([ReadMatrix], [ReadColumns],
// [ReadOwnedColumns]) also refuse, at the line of its largest index, a file
// that spans more columns than its entries justify, max(2²⁰, 64 × entries)
// (see [MaxWidth]): the apps keep state per column.
//
// A single '\n' terminating the last row is normal; a final row without one
// is accepted too.
//
// For data-parallel training each worker reads only its own rows: it calls
// [CountRows] once, picks its contiguous range with [ShardRange] and parses
// just that range with [ReadRange], which skips earlier lines without parsing
// them.
package libsvm
