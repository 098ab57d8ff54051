package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/governance"
)

// The audit trail is written with COPY … FROM STDIN (FORMAT binary): one
// statement per batch whatever its size, no parameters for Postgres to
// parse and plan, and rows encoded here straight into one reused buffer —
// no interface boxing, no reflection, no allocation per event. A batch is
// one statement, so it is in whole or not at all.

// auditCopyColumns are the columns each encoded row fills, in order.
const auditCopyColumns = 22

// copyHeader starts a binary COPY stream: the signature, flags, no
// header extension.
var copyHeader = []byte("PGCOPY\n\377\r\n\000\x00\x00\x00\x00\x00\x00\x00\x00")

// pgEpochMicros is 2000-01-01 00:00:00 UTC, Postgres's timestamp zero, in
// Unix microseconds.
const pgEpochMicros = 946684800 * 1_000_000

// oidText is the type of policy_ids' elements.
const oidText = 25

// copySQL is the COPY statement of the audit trail in quoted schema
// qschema.
func copySQL(qschema string) string {
	return "COPY " + qschema + ".duckicelake_audit (" + auditColumns + ") FROM STDIN (FORMAT binary)"
}

// copyBuf encodes a batch of audit rows; reuse one per writer.
type copyBuf struct {
	b []byte
	r bytes.Reader
	// rows, index and key are coalesce's, kept between batches.
	rows  []row
	index map[string]int
	key   []byte
}

// coalesce appends batch's rows: each event one row, but the events
// marked Coalesce that agree in every stored column but time, request id,
// bytes and latency one row together, where the first of them was.
func (c *copyBuf) coalesce(batch []*queued) {
	if c.index == nil {
		c.index = make(map[string]int)
	}
	clear(c.index)
	c.rows = c.rows[:0]
	for _, q := range batch {
		ev := &q.ev
		if ev.Coalesce {
			c.key = coalesceKey(c.key[:0], ev)
			if i, ok := c.index[string(c.key)]; ok {
				r := &c.rows[i]
				r.count++
				if q.at.After(r.last) {
					r.last = q.at
				}
				if q.at.Before(r.at) {
					r.at = q.at
				}
				r.bytesIn += ev.BytesIn
				r.bytesOut += ev.BytesOut
				r.latency = max(r.latency, ev.Latency)
				continue
			}
			c.index[string(c.key)] = len(c.rows)
		}
		c.rows = append(c.rows, row{ev: ev, at: q.at, last: q.at, count: 1, bytesIn: ev.BytesIn, bytesOut: ev.BytesOut, latency: ev.Latency})
	}
	for i := range c.rows {
		c.addRow(&c.rows[i])
	}
}

func (c *copyBuf) reset() { c.b = append(c.b[:0], copyHeader...) }

// add appends ev, which happened at at, as one row.
func (c *copyBuf) add(ev *governance.Event, at time.Time) {
	c.addRow(&row{ev: ev, at: at, count: 1, bytesIn: ev.BytesIn, bytesOut: ev.BytesOut, latency: ev.Latency})
}

// row is one trail row: an event, or a run of identical coalesced events
// (count of them, from at to last).
type row struct {
	ev                *governance.Event
	at, last          time.Time
	count             int
	bytesIn, bytesOut int64
	latency           time.Duration
}

// addRow appends r as one row.
func (c *copyBuf) addRow(r *row) {
	ev := r.ev
	b := binary.BigEndian.AppendUint16(c.b, auditCopyColumns)
	b = appendTimestamp(b, r.at)
	b = appendText(b, ev.Source)
	b = appendTextBytes(b, ev.RequestID)
	b = appendText(b, ev.Principal)
	b = appendText(b, ev.Actor)
	b = appendText(b, ev.Channel)
	b = appendText(b, ev.Delegator)
	b = appendText(b, ev.Action)
	b = appendText(b, ev.Namespace)
	b = appendText(b, ev.Table)
	b = appendTextBytes(b, ev.Bucket)
	b = appendTextBytes(b, keyColumn(ev))
	b = appendText(b, ev.Decision.String())
	b = appendText(b, ev.Reason)
	b = appendTextArray(b, ev.PolicyIDs)
	b = binary.BigEndian.AppendUint32(b, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(int32(ev.Status)))
	b = appendText(b, ev.Error)
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(r.bytesIn))
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(r.bytesOut))
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(float64(r.latency)/float64(time.Millisecond)))
	b = binary.BigEndian.AppendUint32(b, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(int32(r.count)))
	if r.count > 1 {
		b = appendTimestamp(b, r.last)
	} else {
		b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // NULL: a row of one
	}
	c.b = b
}

// keyColumn is what ev stores as its key: the object key, or a listing's
// prefix.
func keyColumn(ev *governance.Event) []byte {
	if ev.IsList {
		return ev.Prefix
	}
	return ev.Key
}

// coalesceKey appends to b what identifies ev's row among coalesced
// events: every stored column but the time, request id, bytes and
// latency, each length-prefixed so that no two events share a key by
// their fields' boundaries.
func coalesceKey(b []byte, ev *governance.Event) []byte {
	str := func(b []byte, s string) []byte {
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	byt := func(b, v []byte) []byte {
		b = binary.AppendUvarint(b, uint64(len(v)))
		return append(b, v...)
	}
	b = str(b, ev.Source)
	b = str(b, ev.Principal)
	b = str(b, ev.Actor)
	b = str(b, ev.Channel)
	b = str(b, ev.Delegator)
	b = str(b, ev.Action)
	b = str(b, ev.Namespace)
	b = str(b, ev.Table)
	b = byt(b, ev.Bucket)
	b = byt(b, keyColumn(ev))
	b = append(b, byte(ev.Decision))
	b = str(b, ev.Reason)
	b = binary.AppendUvarint(b, uint64(len(ev.PolicyIDs)))
	for _, p := range ev.PolicyIDs {
		b = str(b, p)
	}
	b = binary.AppendVarint(b, int64(ev.Status))
	return str(b, ev.Error)
}

// appendTimestamp appends t as a timestamptz field.
func appendTimestamp(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixMicro()-pgEpochMicros))
}

// copy writes the encoded rows to the trail over tx's connection.
func (c *copyBuf) copy(ctx context.Context, tx pgx.Tx, qschema string) error {
	c.b = binary.BigEndian.AppendUint16(c.b, 0xFFFF) // the trailer: -1 fields
	c.r.Reset(c.b)
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, &c.r, copySQL(qschema)); err != nil {
		return fmt.Errorf("governance: write the audit trail: %w", err)
	}
	return nil
}

// appendText appends s as a text field: text holds valid UTF-8 without
// NUL, so anything else is made storable first (the rare case, which
// allocates).
func appendText(b []byte, s string) []byte {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		s = sanitize(s)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// appendTextBytes is appendText of a byte slice (a key, a request id).
func appendTextBytes(b, v []byte) []byte {
	if !utf8.Valid(v) || bytes.IndexByte(v, 0) >= 0 {
		return appendText(b, sanitize(string(v)))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// appendTextArray appends a one-dimensional text[] (the empty array for
// none: the column is NOT NULL).
func appendTextArray(b []byte, vs []string) []byte {
	at := len(b)
	b = binary.BigEndian.AppendUint32(b, 0) // the field's length, set below
	if len(vs) == 0 {
		b = binary.BigEndian.AppendUint32(b, 0) // no dimensions
	} else {
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	b = binary.BigEndian.AppendUint32(b, 0) // no NULL elements
	b = binary.BigEndian.AppendUint32(b, oidText)
	if len(vs) > 0 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(vs)))
		b = binary.BigEndian.AppendUint32(b, 1) // lower bound
		for _, v := range vs {
			b = appendText(b, v)
		}
	}
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// sanitize makes s storable as Postgres text: NUL is the one byte text
// cannot hold; invalid UTF-8 is replaced.
func sanitize(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
