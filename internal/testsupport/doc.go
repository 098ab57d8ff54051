// Package testsupport is the scaffolding every test package shares, so that
// each concept has one definition: where the repository is, which Python
// runs the interoperability scripts, what scripts/test.sh's stack provides
// and what a test does when a part of it is missing, how a test waits for
// something to happen, how it checks that a package stopped its goroutines,
// how it serves on a loopback listener and starts a private S3 backend,
// golden files, and which tests cannot run under the race detector
// (scripts/gotest.sh runs those again without it).
//
// A test that needs something the machine does not have (the venv, a part
// of the stack, versitygw, pg_dump) calls [Missing]: the test is skipped
// locally and fails under CI=true, so a CI run can never pass by skipping.
//
// It is for tests only: it may import the testing package and the standard
// library, nothing of this module (so that every package's in-package tests
// can use it without an import cycle), and no production package may import
// it (TestProductionDoesNotImport checks). Its subpackage pgtest gives tests
// Postgres databases.
package testsupport
