package web

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/web/api"
	"github.com/jobdrop/jobdrop/web/field"
)

// Timeouts bound how long one client may hold a connection of the
// console; Server.HTTPServer applies them.
type Timeouts struct {
	// ReadHeader bounds reading a request's line and headers. Defaults to
	// 10s.
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included, from the moment
	// its connection is ready for it: an upload must arrive within it.
	// Defaults to 2m.
	Read time.Duration
	// Write bounds writing an answer, from the end of its request's
	// headers. An answer streamed as it is made (/events, exports, GET
	// /schedulers) gets Write for each of its writes instead, so it lasts
	// as long as the client keeps reading. Defaults to 2m.
	Write time.Duration
	// Idle bounds the wait for the next request on a connection kept
	// alive. Defaults to 1m.
	Idle time.Duration
}

// withDefaults fills the zero durations.
func (t Timeouts) withDefaults() Timeouts {
	if t.ReadHeader <= 0 {
		t.ReadHeader = 10 * time.Second
	}
	if t.Read <= 0 {
		t.Read = 2 * time.Minute
	}
	if t.Write <= 0 {
		t.Write = 2 * time.Minute
	}
	if t.Idle <= 0 {
		t.Idle = time.Minute
	}
	return t
}

// HTTPServer is the http.Server to serve the console with: its handler,
// its timeouts, and its live-update streams ended on Shutdown (see
// Close).
func (s *Server) HTTPServer() *http.Server {
	t := s.cfg.Timeouts
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
	}
	srv.RegisterOnShutdown(s.Close)
	return srv
}

// streamWriter is an answer written as it is made: every write gets a
// deadline of its own.
type streamWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	write time.Duration
}

// streaming lets the answer of w run as long as the client takes it: the
// read deadline is lifted (nothing more is read, and the server keeps
// noticing a client that hangs up) and each write must be done within
// Timeouts.Write, rather than the whole answer. Write through what it
// returns.
func (s *Server) streaming(w http.ResponseWriter) http.ResponseWriter {
	rc := http.NewResponseController(w)
	// Not every writer supports deadlines (httptest's recorder): then
	// there is none to lift either.
	_ = rc.SetReadDeadline(time.Time{})
	return &streamWriter{ResponseWriter: w, rc: rc, write: s.cfg.Timeouts.Write}
}

func (w *streamWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.write))
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// hostAllowed reports whether the console answers to the Host a request
// names. A browser always sends the name the page was loaded from, so a
// page on another site whose name was made to point here (DNS rebinding)
// still names its own site: only names the console was told about pass.
// An IP address passes (rebinding needs a name), and so does a request
// with no Host (HTTP/1.0 probes), which no browser sends.
func (s *Server) hostAllowed(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true // always the machine itself (RFC 6761)
	}
	return s.hosts[host]
}

// checkHost refuses a request for a name the console does not answer to,
// before anything else looks at it.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			s.hostRefusals.Do(func() {
				s.log.Warn("request for a host name the console does not answer to refused (logged once a minute); add the name to console.hosts if it is yours",
					"host", field.Clean(r.Host, 200), "remote", s.clientAddr(r))
			})
			http.Error(w, "misdirected request: this console does not answer to the name "+field.Clean(r.Host, 200)+
				" (its administrator can add it to console.hosts)", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// maxBody bounds the body of every request but an upload's.
const maxBody = 1 << 20

// Body limits: an upload (a file and its dry run, POST /api/diff) may
// send maxUpload bytes, every other request maxBody.
var uploadRoutes = map[string]bool{"POST /upload": true, "POST /api/diff": true}

// bounded bounds every request's body while it is read, and removes the
// temporary files of a multipart form parsed from it when its handler
// returns, whatever the handler did. It sits right before the routes, so
// it sees the very request each handler gets.
func (s *Server) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := int64(maxBody)
		if uploadRoutes[r.Method+" "+r.URL.Path] {
			limit = maxUpload
		}
		if r.ContentLength > limit {
			s.tooLarge(w, r, limit)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		defer func() {
			if r.MultipartForm != nil {
				r.MultipartForm.RemoveAll()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// readForm parses a form body, URL-encoded or multipart, within its
// route's body limit, so that every field is read up front and an error
// (isTooLarge) says a body was cut off. Multipart files stay in memory:
// the limit is small.
func readForm(r *http.Request) error {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return r.ParseMultipartForm(maxBody)
	}
	return r.ParseForm()
}

// tooLarge answers a request whose body is over its route's limit.
func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	msg := "request body too large: at most " + byteSize(limit)
	if isAPI(r.URL.Path) || !acceptsHTML(r) {
		api.Error(w, http.StatusRequestEntityTooLarge, msg)
		return
	}
	s.page(w, r, http.StatusRequestEntityTooLarge, "Too large", "", messageView("Too large", msg+"."))
}

// isTooLarge reports whether err is a body's read stopped at its limit.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// byteSize says n bytes in MiB or KiB, as limits are set.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// clientAddr is the address a request came from: the peer's, or, when
// the peer is a trusted proxy, the nearest address before it in
// X-Forwarded-For that is not a trusted proxy itself.
func (s *Server) clientAddr(r *http.Request) string {
	peer := r.RemoteAddr
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	ip, err := netip.ParseAddr(peer)
	if err != nil || !s.trustedProxy(ip) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // not written by a proxy we trust
		}
		if ip = hop.Unmap(); !s.trustedProxy(ip) {
			break
		}
	}
	return ip.String()
}

// trustedProxy reports whether ip is one of Config.TrustedProxies.
func (s *Server) trustedProxy(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// isNoStore reports whether the answer to a request for path may hold
// what only a logged-in user may see, and so must not be kept by browsers
// or proxies: every answer but the static files.
func isNoStore(path string) bool { return !strings.HasPrefix(path, "/static/") }
