// Package bench holds the benchmarks and load tools that compare duckicelake
// with the S3 backend direct, with a bare relay, with peers and with another
// build of itself, in the same run. Results and the commands that produced
// them are in RESULTS.md.
//
// The package itself is what the load tools under cmd/ share: the order in
// which a round visits the targets, the spread (min, median, max) over
// rounds that every figure is reported with, the per-round ratios of two
// targets, and the -vs list naming the targets to compare against. It imports the standard library
// only; the tools under cmd/ may import any package of the module.
package bench
