// Package audittest gives tests an audit sink that keeps what it is given.
//
// It is for tests only, like its parent testsupport: it may import
// governance (the Event it records) and the standard library, nothing else
// of this module, and no production package may import it.
package audittest

import (
	"bytes"
	"slices"
	"sync"

	"github.com/duckicelake/duckicelake/governance"
)

// Recorder is a governance.Sink that keeps a copy of every event, its
// borrowed byte slices included. It is safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	evs []governance.Event
}

// Record keeps a copy of ev.
func (r *Recorder) Record(ev *governance.Event) {
	c := *ev
	for _, b := range []*[]byte{&c.RequestID, &c.Remote, &c.Method, &c.AccessKeyID, &c.Bucket, &c.Key,
		&c.CopyBucket, &c.CopyKey, &c.Prefix, &c.UpstreamRequestID} {
		*b = bytes.Clone(*b)
	}
	c.PolicyIDs = slices.Clone(c.PolicyIDs)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, c)
}

// Events returns the events recorded so far, oldest first.
func (r *Recorder) Events() []governance.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}
