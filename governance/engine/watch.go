package engine

import (
	"context"
	"strconv"
	"strings"

	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
)

// Watch keeps the engine's governance state current in this process: it
// LISTENs on store.Channel (every change notifies it) and reloads when a
// newer version of this catalog's governance is announced, and after every
// (re)connect, when notifications may have been missed. It returns when
// ctx ends.
func (e *Engine) Watch(ctx context.Context, connect pgnotify.ConnectFunc, schema string) error {
	if schema == "" {
		schema = "public"
	}
	l := &pgnotify.Listener{Connect: connect, Logger: e.log, OnReconnect: e.Reload}
	l.Handle(store.Channel, func(ctx context.Context, n pgnotify.Notification) error {
		v, s, ok := strings.Cut(n.Payload, " ")
		if !ok || s != schema {
			return nil
		}
		version, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil
		}
		return e.ObserveVersion(ctx, version)
	})
	return l.Run(ctx)
}
