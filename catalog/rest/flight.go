package rest

import "sync"

// flightGroup runs one build per key at a time; callers that arrive while
// it runs wait for its result instead of starting their own. When the
// current snapshot moves, thousands of LoadTable calls may miss at once:
// they cost one materialiser call, not thousands.
type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flightCall
}

type flightCall struct {
	done chan struct{}
	e    *loadEntry
	err  error
}

func (g *flightGroup) do(key string, fn func() (*loadEntry, error)) (*loadEntry, error) {
	g.mu.Lock()
	if c, ok := g.m[key]; ok {
		g.mu.Unlock()
		<-c.done
		return c.e, c.err
	}
	if g.m == nil {
		g.m = make(map[string]*flightCall)
	}
	c := &flightCall{done: make(chan struct{})}
	g.m[key] = c
	g.mu.Unlock()

	defer func() {
		g.mu.Lock()
		delete(g.m, key)
		g.mu.Unlock()
		close(c.done)
	}()
	c.e, c.err = fn()
	return c.e, c.err
}
