// Package objstore is the catalog's one object-storage layer: a Location
// type that every containment decision goes through (Location.Within), and
// a Store (Get with a size cap, Put, Exists, List, DeletePrefix) with one
// not-found error, implemented over S3 with the upstream's root keys, over
// local files (a DuckLake catalog with a local DATA_PATH), and in memory
// for tests.
//
// Locations are refused, never repaired, when they could mean two things:
// a "." or ".." segment (S3 backends on a file system resolve them, so
// "s3://lake/data/a/../b/x" is b's file to the backend but a's to a string
// comparison), an empty segment ("a//b", one directory on a file system,
// two prefixes to S3), a control character, or a backslash. What Parse
// accepts, Within compares segment by segment.
//
// objstore may import the AWS SDK and the standard library; the catalog's
// packages import it, and nothing of the catalog is imported here.
package objstore
