// Package bench holds the benchmarks and load tools that compare duckicelake
// with the S3 backend direct and with peers in the same run. Results and the
// commands that produced them are in RESULTS.md.
package bench
