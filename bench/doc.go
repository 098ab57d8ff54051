// Package bench holds the benchmarks and load tools that compare duckicelake
// with the S3 backend direct, with a bare relay, with peers and with another
// build of itself, in the same run. Results and the commands that produced
// them are in RESULTS.md.
//
// The package itself is what the load tools under cmd/ share: the order in
// which a round visits the targets and the spread (min, median, max) over
// rounds that every figure is reported with. It imports the standard library
// only; the tools under cmd/ may import any package of the module.
package bench
