// Package pgnotify holds the Postgres primitives that keep a fleet of
// duckicelake processes in step: a LISTEN client that survives connection
// loss, and leader election by advisory lock.
//
// Both hold one dedicated connection each, opened by a [ConnectFunc] outside
// any pool, because LISTEN and session advisory locks belong to a session:
// they need a direct connection or session pooling, never a transaction
// pooler such as PgBouncer in transaction mode.
//
// A [Listener] delivers notifications to handlers in the order Postgres sends
// them. Postgres drops the notifications of a session that is gone, so after
// every connect — the first included — the Listener calls OnReconnect once it
// listens again; that is where a caller loads the state it may have missed,
// and nothing committed after the load can then be missed.
//
// [Elect] campaigns for a lock with pg_try_advisory_lock. The winner holds the
// lock as long as its connection lives; when the connection dies Postgres
// frees the lock and another process takes over. A leader learns of its loss
// only when it notices its connection is gone (at once when the server ends
// the session, within the health interval when the network silently drops),
// so two leaders may overlap briefly: leader work must be idempotent.
package pgnotify
