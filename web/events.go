package web

import (
	"net/http"
	"sync"
	"time"
)

// events fans the store's changes out to open pages. One goroutine per
// stream waits on the shared change channel; nothing runs while no page is
// open.
type events struct {
	changes func() <-chan struct{}
	// closed ends every stream: see Server.Close.
	closed    chan struct{}
	closeOnce sync.Once
}

func newEvents(changes func() <-chan struct{}) *events {
	return &events{changes: changes, closed: make(chan struct{})}
}

// Close ends the console's live-update streams (/events), open and to
// come, as a shutting-down server must: an open page holds its stream
// until its request ends, which http.Server.Shutdown waits for and never
// causes, so a page left open would make every graceful stop time out.
// Register it with http.Server.RegisterOnShutdown. A stream ended this way
// has told the page to reconnect after a second, which it does once the
// console is back. Close is idempotent; other requests are unaffected.
func (s *Server) Close() {
	s.events.closeOnce.Do(func() { close(s.events.closed) })
}

// keepAlive is how often an idle stream sends a comment, so proxies keep
// it open.
const keepAlive = 25 * time.Second

// coalesce is the shortest gap between two change events of one stream:
// a burst of commits refreshes a page once, not a hundred times.
const coalesce = 200 * time.Millisecond

// serveEvents is /events: a server-sent event stream that says "changed"
// after every commit the recorder applies, and when the dashboard's
// timeline and charts are computed anew. It lasts past the server's
// read and write timeouts: each write has a deadline of its own (see
// streaming).
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if s.events.changes == nil {
		http.Error(w, "no live updates", http.StatusNotFound)
		return
	}
	w = s.streaming(w)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// A change between the page's rendering and this connection would go
	// unseen: every stream starts with one change event.
	if _, err := w.Write([]byte("retry: 1000\n\nevent: changed\ndata: {}\n\n")); err != nil {
		return
	}
	rc.Flush()
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	var last time.Time
	for {
		changed := s.events.changes()
		// A new timeline or chart on the dashboard is a change too.
		computed := s.glance.next()
		tell := false
		select {
		case <-r.Context().Done():
			return
		case <-s.events.closed:
			return
		case <-ping.C:
			if _, err := w.Write([]byte(": ping\n\n")); err != nil {
				return
			}
		case <-computed:
			tell = true
		case <-changed:
			tell = true
		}
		if tell {
			if wait := coalesce - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-r.Context().Done():
					t.Stop()
					return
				case <-s.events.closed:
					t.Stop()
					return
				case <-t.C:
				}
			}
			last = time.Now()
			if _, err := w.Write([]byte("event: changed\ndata: {}\n\n")); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
