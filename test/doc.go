// Package test holds end-to-end and interop suites that run against real
// Postgres, a real S3 backend and real clients.
package test
