// Package gateway holds black-box suites against a running stack: real S3
// clients (aws-sdk-go-v2, minio-go; boto3 and DuckDB in the Python files
// beside) through the gateway, and adversarial requests that must be refused
// with the right S3 error and leave the backend unchanged.
//
// scripts/test.sh starts versitygw and `duckicelake serve` on free ports and
// passes them in DUCKICELAKE_TEST_* variables (listed in that script). Without
// them the tests skip, except under CI=true, where a missing stack fails.
package gateway
