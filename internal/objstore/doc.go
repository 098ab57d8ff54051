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
// accepts, Within compares segment by segment. Percent-encodings are
// literal key bytes ("%2e%2e" is no dot segment): nothing decodes them.
//
// The rule for callers: every location that comes from a client is parsed
// with Parse (or ParseDir) and checked with Within against the directory
// it must be in — a table's, a namespace's — before a Store is asked for
// anything, since the S3 store holds the upstream's root keys; two tables'
// directories may not Overlap. Nothing else (no string prefix, no SQL
// starts_with) decides containment. What a refusal says must not depend
// on what the Store holds: no object is read to decide it.
//
// objstore may import the AWS SDK and the standard library; the catalog's
// packages import it, and nothing of the catalog is imported here.
package objstore
