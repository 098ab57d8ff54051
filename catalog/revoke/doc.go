// Package revoke is the fleet-wide credential revocation list: a Postgres
// table, duckicelake_revocation (a sidecar that catalog/ducklake's Init
// creates), mirrored in memory by every process and kept current by
// LISTEN/NOTIFY.
//
// [Store.Revoke] inserts a vend id with its credential's expiry and notifies
// channel [Channel] in the same statement, so a revocation is visible to
// every process, or none. Each process loads the table when its listener
// connects and again after every reconnect (notifications sent while it was
// disconnected are lost), applies notifications as they come, and drops
// entries once their credentials have expired, deleting them from the table
// too.
//
// [Store.Revoked] is a lock-free map lookup for the gateway's hot path: the
// map is copied on every change, which is rare, and never written in place.
// While a process is disconnected it keeps answering from the list it has,
// so a revocation made meanwhile takes effect there on reconnect.
package revoke
