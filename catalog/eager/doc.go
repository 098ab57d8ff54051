// Package eager drives the eager path: a trigger on ducklake_snapshot
// (sidecar migration 2 of catalog/ducklake) NOTIFYs every committed
// snapshot, and one process of the fleet — elected by advisory lock —
// listens and hands each new snapshot id to a handler, typically the
// materialiser warming the Iceberg metadata of that snapshot.
//
// On gaining leadership and after every reconnect the leader catches up:
// it calls the handler once for the current newest snapshot, since
// notifications sent while no one listened are lost. The handler therefore
// sees an id more than once and must be idempotent; it runs on the
// listener's goroutine, so a slow one delays the next. Without the eager
// path a lazy LoadTable is still correct, only colder.
//
// [Watcher.Observe] is the same without the election, for state every
// process keeps, such as the catalog's notion of the current snapshot.
package eager
