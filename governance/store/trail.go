package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/defaults"
)

// auditColumns are duckicelake_audit's columns InsertEvents fills.
const auditColumns = "ts, source, request_id, principal, actor, channel, delegator, action, namespace, table_name, " +
	"bucket, key, decision, reason, policy_ids, status, error, bytes_in, bytes_out, latency_ms, event_count, last_ts"

// InsertEvents writes evs to the audit trail of the catalog in quoted
// schema qschema, in one statement; at[i] is when evs[i] happened (one
// time for all when at has a single element).
func InsertEvents(ctx context.Context, tx pgx.Tx, qschema string, at []time.Time, evs []*governance.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var c copyBuf
	c.reset()
	for i, ev := range evs {
		ts := at[0]
		if len(at) == len(evs) {
			ts = at[i]
		}
		c.add(ev, ts)
	}
	return c.copy(ctx, tx, qschema)
}

// Record is one audit trail row as queried.
type Record struct {
	ID        int64     `json:"id"`
	Time      time.Time `json:"ts"`
	Source    string    `json:"source"`
	RequestID string    `json:"request-id,omitempty"`
	Principal string    `json:"principal"`
	Actor     string    `json:"actor,omitempty"`
	Channel   string    `json:"channel,omitempty"`
	Delegator string    `json:"delegator,omitempty"`
	Action    string    `json:"action"`
	Namespace string    `json:"namespace,omitempty"`
	Table     string    `json:"table,omitempty"`
	Bucket    string    `json:"bucket,omitempty"`
	Key       string    `json:"key,omitempty"`
	Decision  string    `json:"decision"`
	Reason    string    `json:"reason,omitempty"`
	PolicyIDs []string  `json:"policy-ids,omitempty"`
	Status    int       `json:"status"`
	Error     string    `json:"error,omitempty"`
	BytesIn   int64     `json:"bytes-in"`
	BytesOut  int64     `json:"bytes-out"`
	LatencyMS float64   `json:"latency-ms"`
	// Count is how many identical events the row stands for (1 but for
	// coalesced reads, governance.Event.Coalesce: then Time is the first's,
	// LastTime the last's, the bytes their sum and the latency the worst).
	Count    int        `json:"count"`
	LastTime *time.Time `json:"last-ts,omitempty"`
}

// Query filters the audit trail. Zero fields do not filter.
type Query struct {
	Principal string
	Namespace string
	Table     string
	Decision  string // "allow", "deny", "none"
	Since     time.Time
	Until     time.Time
	// After is the cursor: only rows with a larger id (the next page).
	After int64
	// Limit bounds the rows returned (default and maximum 1000).
	Limit int
}

// MaxAuditPage bounds one page of the audit trail.
const MaxAuditPage = 1000

// Audit returns the rows matching q, oldest first, and the cursor of the
// next page (0 when this one is the last).
func (s *Store) Audit(ctx context.Context, q Query) ([]Record, int64, error) {
	limit := q.Limit
	if limit <= 0 || limit > MaxAuditPage {
		limit = MaxAuditPage
	}
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if q.Principal != "" {
		add("principal = $%d", q.Principal)
	}
	if q.Namespace != "" {
		add("namespace = $%d", q.Namespace)
	}
	if q.Table != "" {
		add("table_name = $%d", q.Table)
	}
	if q.Decision != "" {
		add("decision = $%d", q.Decision)
	}
	if !q.Since.IsZero() {
		add("ts >= $%d", q.Since)
	}
	if !q.Until.IsZero() {
		add("ts < $%d", q.Until)
	}
	if q.After > 0 {
		add("id > $%d", q.After)
	}
	sql := `SELECT id, ts, source, request_id, principal, actor, channel, delegator, action, namespace, table_name, bucket, key,
		decision, reason, policy_ids, status, error, bytes_in, bytes_out, latency_ms, event_count, last_ts FROM ` + s.t("duckicelake_audit")
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, limit+1)
	sql += fmt.Sprintf(" ORDER BY id LIMIT $%d", len(args))
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("governance: read the audit trail: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.ID, &r.Time, &r.Source, &r.RequestID, &r.Principal, &r.Actor, &r.Channel, &r.Delegator, &r.Action,
			&r.Namespace, &r.Table, &r.Bucket, &r.Key, &r.Decision, &r.Reason, &r.PolicyIDs, &r.Status, &r.Error,
			&r.BytesIn, &r.BytesOut, &r.LatencyMS, &r.Count, &r.LastTime); err != nil {
			return nil, 0, fmt.Errorf("governance: read the audit trail: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("governance: read the audit trail: %w", err)
	}
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// PurgeAudit deletes audit rows older than before, in batches, and
// reports how many.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.db.Exec(ctx, `DELETE FROM `+s.t("duckicelake_audit")+` WHERE id IN (SELECT id FROM `+
			s.t("duckicelake_audit")+` WHERE ts < $1 ORDER BY id LIMIT 10000)`, before)
		if err != nil {
			return total, fmt.Errorf("governance: purge the audit trail: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 10000 {
			return total, nil
		}
	}
}

// TrailOptions configure a TrailWriter.
type TrailOptions struct {
	// Buffer bounds the events waiting to be written (65536).
	Buffer int
	// Batch is the most events one write takes (1000).
	Batch int
	// FlushInterval is the longest an event waits (200ms).
	FlushInterval time.Duration
	// Logger receives write failures and overflow reports.
	Logger *zap.Logger
	// OnDrop counts events that did not reach the trail: they did not fit
	// the buffer, or the writer was closed before Postgres came back (a
	// metric).
	OnDrop func(n int)
	// OnWrite counts events written.
	OnWrite func(n int)
	// OnRefuse counts RecordChecked's refusals: events the buffer could
	// not take, whose requests were refused instead (a metric).
	OnRefuse func(n int)
}

// TrailWriter is a governance.Sink that writes events to the audit trail
// in batches from a bounded buffer. Record never blocks: an event that
// does not fit is counted (OnDrop) and logged, never silently lost. A
// batch Postgres does not take is kept and written again, with backoff,
// until it is in: while it waits the buffer fills, and only what then
// overflows is dropped (counted). RecordChecked queues the same way but
// refuses instead of dropping, and RecordSync writes before it returns.
// Close writes what is buffered.
type TrailWriter struct {
	s   *Store
	opt TrailOptions
	ch  chan *queued
	// kick wakes the writer when a full batch (kickAt events; half the
	// buffer when that is smaller) waits in ch.
	kick   chan struct{}
	kickAt int
	// free holds the queued events the writer is done with, for Record to
	// fill again: in the steady state queueing an event allocates nothing.
	free chan *queued
	done chan struct{}
	wg   sync.WaitGroup
	// sync carries RecordSync's events to syncLoop, which group-commits
	// them: every caller waiting meanwhile shares one transaction.
	sync chan *syncReq

	dropped atomic.Int64 // since the last overflow report
	closed  atomic.Bool
	// down is set while the trail's last write failed, cleared by the
	// next that succeeds: RecordChecked then writes synchronously, so
	// that no answer goes out on an event that might never be written.
	down atomic.Bool
}

// NewTrailWriter starts a TrailWriter over s.
func (s *Store) NewTrailWriter(opt TrailOptions) *TrailWriter {
	opt.Buffer = defaults.Positive(opt.Buffer, 65536)
	opt.Batch = defaults.Positive(opt.Batch, 1000)
	opt.FlushInterval = defaults.Positive(opt.FlushInterval, 200*time.Millisecond)
	if opt.Logger == nil {
		opt.Logger = zap.NewNop()
	}
	w := &TrailWriter{s: s, opt: opt, ch: make(chan *queued, opt.Buffer), kick: make(chan struct{}, 1), free: make(chan *queued, opt.Buffer),
		done: make(chan struct{}), sync: make(chan *syncReq, opt.Batch)}
	w.kickAt = max(1, min(opt.Batch, opt.Buffer/2))
	w.wg.Add(2)
	go w.run()
	go w.syncLoop()
	return w
}

// syncReq is one RecordSync call waiting for its event to be written.
type syncReq struct {
	q    queued
	err  error
	done chan struct{}
}

// The errors of RecordSync and RecordChecked.
var (
	errTrailClosed = errors.New("audit trail: the writer is closed")
	// ErrTrailFull refuses an event the buffer has no room for.
	ErrTrailFull = errors.New("audit trail: the buffer is full")
)

// syncLoop writes RecordSync's events: whatever is queued when a write
// starts goes in one transaction (up to Batch), so concurrent durable
// decisions cost one round trip together, not one each.
func (w *TrailWriter) syncLoop() {
	defer w.wg.Done()
	batch := make([]*syncReq, 0, w.opt.Batch)
	qs := make([]*queued, 0, w.opt.Batch)
	var enc copyBuf
	for {
		select {
		case r := <-w.sync:
			batch = append(batch[:0], r)
		fill:
			for len(batch) < w.opt.Batch {
				select {
				case r := <-w.sync:
					batch = append(batch, r)
				default:
					break fill
				}
			}
			qs = qs[:0]
			for _, r := range batch {
				qs = append(qs, &r.q)
			}
			ctx, cancel := context.WithTimeout(context.Background(), syncWriteTimeout)
			err := w.write(ctx, qs, &enc)
			cancel()
			for _, r := range batch {
				r.err = err
				close(r.done)
			}
		case <-w.done:
			for {
				select {
				case r := <-w.sync:
					r.err = errTrailClosed
					close(r.done)
				default:
					return
				}
			}
		}
	}
}

// syncWriteTimeout bounds one write: its callers' own deadlines differ,
// and one caller's must not fail the others'.
const syncWriteTimeout = 30 * time.Second

// Record implements governance.Sink: it copies ev (its byte slices are the
// request's) into the buffer, or counts it dropped when there is no room.
func (w *TrailWriter) Record(ev *governance.Event) {
	if w.closed.Load() || !w.enqueue(ev) {
		w.drop(1)
	}
}

// RecordChecked implements governance.CheckedSink: it queues ev as Record
// does, but reports instead of dropping — ErrTrailFull when the buffer has
// no room, an error after Close — and, while the trail's last write
// failed, writes ev synchronously (RecordSync), so that a caller that
// answers only on success never answers on an event the trail may not
// get. A queued event is written like the gateway's: kept and retried
// until Postgres takes it.
func (w *TrailWriter) RecordChecked(ctx context.Context, ev *governance.Event) error {
	switch {
	case w.closed.Load():
		return errTrailClosed
	case w.down.Load():
		return w.RecordSync(ctx, ev)
	case !w.enqueue(ev):
		if w.opt.OnRefuse != nil {
			w.opt.OnRefuse(1)
		}
		return ErrTrailFull
	}
	return nil
}

// enqueue copies ev into a free queued event and buffers it; false when
// the buffer is full.
func (w *TrailWriter) enqueue(ev *governance.Event) bool {
	var c *queued
	select {
	case c = <-w.free:
	default:
		c = new(queued)
	}
	copyEvent(&c.ev, ev)
	c.at = time.Now()
	select {
	case w.ch <- c:
		if len(w.ch) >= w.kickAt {
			// A batch is waiting: wake the writer (it otherwise wakes on
			// its ticker, not for every event).
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
		return true
	default:
		w.recycle(c)
		return false
	}
}

// recycle hands c back for Record to fill again.
func (w *TrailWriter) recycle(c *queued) {
	select {
	case w.free <- c:
	default:
	}
}

// RecordSync implements governance.SyncSink: it writes ev to the trail
// before returning (group-committed with the other callers waiting), for
// decisions that must be on the trail before their answer is sent.
func (w *TrailWriter) RecordSync(ctx context.Context, ev *governance.Event) error {
	r := &syncReq{q: queued{at: time.Now()}, done: make(chan struct{})}
	copyEvent(&r.q.ev, ev)
	if w.closed.Load() {
		return errTrailClosed
	}
	select {
	case w.sync <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return errTrailClosed
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *TrailWriter) drop(n int) {
	w.dropped.Add(int64(n))
	if w.opt.OnDrop != nil {
		w.opt.OnDrop(n)
	}
}

// queued is a buffered event and when it was recorded.
type queued struct {
	ev governance.Event
	at time.Time
}

// copyEvent copies src into dst, reusing dst's byte slices and policy ids.
func copyEvent(dst, src *governance.Event) {
	rid, remote, method, akid := dst.RequestID[:0], dst.Remote[:0], dst.Method[:0], dst.AccessKeyID[:0]
	bucket, key, cb, ck, prefix, urid := dst.Bucket[:0], dst.Key[:0], dst.CopyBucket[:0], dst.CopyKey[:0], dst.Prefix[:0], dst.UpstreamRequestID[:0]
	policies := dst.PolicyIDs[:0]
	*dst = *src
	dst.RequestID = append(rid, src.RequestID...)
	dst.Remote = append(remote, src.Remote...)
	dst.Method = append(method, src.Method...)
	dst.AccessKeyID = append(akid, src.AccessKeyID...)
	dst.Bucket = append(bucket, src.Bucket...)
	dst.Key = append(key, src.Key...)
	dst.CopyBucket = append(cb, src.CopyBucket...)
	dst.CopyKey = append(ck, src.CopyKey...)
	dst.Prefix = append(prefix, src.Prefix...)
	dst.UpstreamRequestID = append(urid, src.UpstreamRequestID...)
	// The strings are immutable: sharing them is copying them.
	dst.PolicyIDs = append(policies, src.PolicyIDs...)
}

// retryMax bounds the wait between two attempts at a batch.
const retryMax = 5 * time.Second

func (w *TrailWriter) run() {
	defer w.wg.Done()
	batch := make([]*queued, 0, w.opt.Batch)
	var enc copyBuf
	tick := time.NewTicker(w.opt.FlushInterval)
	defer tick.Stop()
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	closing := false
	// flush writes batch, again and again until Postgres takes it; once
	// the writer is closing, one more attempt and what fails is dropped.
	flush := func() {
		wait := w.opt.FlushInterval
		for attempt := 0; len(batch) > 0; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), syncWriteTimeout)
			err := w.write(ctx, batch, &enc)
			cancel()
			if err == nil {
				if w.opt.OnWrite != nil {
					w.opt.OnWrite(len(batch))
				}
				break
			}
			if attempt == 0 {
				w.opt.Logger.Error("audit trail: a batch could not be written; retrying (the buffer holds what arrives meanwhile)",
					zap.Int("events", len(batch)), zap.Error(err))
			}
			if closing && attempt > 0 {
				w.opt.Logger.Error("audit trail: closing with a batch Postgres did not take; its events are in the JSON audit log only",
					zap.Int("events", len(batch)), zap.Error(err))
				w.drop(len(batch))
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-w.done:
				t.Stop()
				closing = true
			}
			wait = min(2*wait, retryMax)
		}
		for _, q := range batch {
			w.recycle(q)
		}
		batch = batch[:0]
	}
	// drain takes what ch holds, a batch at a time. The writer drains on
	// its ticker or when a sender saw a full batch waiting, rather than
	// receiving each event as it comes: at tens of thousands of events a
	// second, waking for every one costs the request path more than the
	// write does.
	drain := func() {
		for {
			select {
			case ev := <-w.ch:
				batch = append(batch, ev)
				if len(batch) >= w.opt.Batch {
					flush()
				}
			default:
				flush()
				return
			}
		}
	}
	for {
		select {
		case <-w.kick:
			drain()
		case <-tick.C:
			drain()
		case <-report.C:
			if n := w.dropped.Swap(0); n > 0 {
				w.opt.Logger.Warn("audit trail: events did not fit the buffer and were not written to Postgres (they are in the JSON audit log)",
					zap.Int64("events", n))
			}
		case <-w.done:
			closing = true
			drain()
			if n := w.dropped.Swap(0); n > 0 {
				w.opt.Logger.Warn("audit trail: events were not written to Postgres", zap.Int64("events", n))
			}
			return
		}
	}
}

// write writes batch in one COPY; the outcome sets whether the trail is
// down.
func (w *TrailWriter) write(ctx context.Context, batch []*queued, enc *copyBuf) error {
	err := w.writeBatch(ctx, batch, enc)
	w.down.Store(err != nil)
	return err
}

func (w *TrailWriter) writeBatch(ctx context.Context, batch []*queued, enc *copyBuf) error {
	enc.reset()
	enc.coalesce(batch)
	tx, err := w.s.db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := enc.copy(ctx, tx, w.s.schema); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Close stops accepting events and writes those buffered.
func (w *TrailWriter) Close() {
	if w.closed.Swap(true) {
		return
	}
	close(w.done)
	w.wg.Wait()
}
