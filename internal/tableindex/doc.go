// Package tableindex answers "whose file is this?": the DuckLake table an S3
// object belongs to, for a bucket and key, without a lock and without an
// allocation, so that the gateway, governance, export and the remote signer
// can ask it on every request.
//
// An [Index] is an immutable snapshot of the catalog at one DuckLake
// snapshot id, built from a [Source]: every table's directory (its resolved
// path, data path + schema path + table path by DuckLake's relative and
// absolute rules) and every data or delete file a table references by an
// absolute path (path_is_relative = false; DuckDB's ducklake_add_data_files
// writes those), since such a file may lie outside the table's directory. A
// key matches the table with the longest directory that is a prefix of it,
// unless it is exactly one of those files, which is more specific; a [Match]
// says which, and whether another table claims the key too (nested
// directories, a file inside another table's directory, two tables on one
// directory), so that a caller can refuse what is ambiguous.
//
// A [Live] holds the current Index and swaps in a new one atomically:
// lookups read it with one atomic load and never wait for a rebuild.
// [Live.Refresh] rebuilds up to a snapshot and returns when the index
// covers it (the signer's path when a key misses an index older than the
// snapshot it read); [Live.Observe] asks for the same in the background and
// returns at once (the eager NOTIFY path). Rebuilds run one at a time and
// coalesce: a rebuild loads the newest snapshot asked for when it starts.
//
// Keys are compared as bytes. They must come from the S3 request
// classifier, which refuses "." and ".." segments, empty segments and
// backslashes — otherwise "t/../u/x" would be t's key here and u's file on a
// backend that resolves paths. Locations in a Source are parsed by the
// loader (catalog/ducklake, with internal/objstore's one Location type).
//
// tableindex imports the standard library only: governance and the gateway
// import it, and it imports nothing of the catalog.
package tableindex
