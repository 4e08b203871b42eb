package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/record"
)

// ConnError says why the brokers would not talk to jobdrop: credentials
// or certificates that retrying cannot fix, reported as such rather than
// as a timeout.
type ConnError struct {
	// Brokers are the seed brokers tried.
	Brokers []string
	// Reason names what failed: "SASL authentication failed for user x",
	// "TLS handshake failed", ….
	Reason string
	Err    error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("kafka at %v: %s: %v", e.Brokers, e.Reason, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// Prepare connects to brokers the way every client of this process will
// (c's TLS and SASL), creates jobdrop's missing topics when c allows it,
// and checks all of them, so that a cluster jobdrop cannot work with stops
// it at start with an error that says why. A connection refused for its
// credentials or certificates is a *ConnError. ctx bounds the whole check.
// With c.Brokers empty, brokers are the embedded broker's. log says what
// Prepare changed.
func Prepare(ctx context.Context, c Config, brokers []string, t record.Topics, log *slog.Logger) error {
	c = c.WithDefaults()
	opts, err := c.Options(brokers)
	if err != nil {
		return err
	}
	w := &connWatch{}
	cl, err := kgo.NewClient(append(opts, kgo.WithHooks(w))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return w.diagnose(err, c, brokers)
	}
	if err := prepareTopics(ctx, kadm.NewClient(cl), t, c, log); err != nil {
		return w.diagnose(err, c, brokers)
	}
	return nil
}

// Kafka protocol API keys of the SASL exchange.
const (
	keySASLHandshake    = 17
	keySASLAuthenticate = 36
)

// connWatch remembers how connections failed. A broker that rejects
// credentials may just close the connection, and the request that needed
// it then fails with a bare EOF; only the failed SASL exchange seen here
// tells what happened.
type connWatch struct {
	mu      sync.Mutex
	saslErr error
	tlsErr  error
}

var (
	_ kgo.HookBrokerE2E     = (*connWatch)(nil)
	_ kgo.HookBrokerConnect = (*connWatch)(nil)
)

// OnBrokerE2E notes a SASL request that got no answer.
func (w *connWatch) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if err := e2e.Err(); err != nil && (key == keySASLHandshake || key == keySASLAuthenticate) {
		w.mu.Lock()
		w.saslErr = firstOf(w.saslErr, err)
		w.mu.Unlock()
	}
}

// OnBrokerConnect notes a connection that failed for TLS.
func (w *connWatch) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if tlsFailure(err) {
		w.mu.Lock()
		w.tlsErr = firstOf(w.tlsErr, err)
		w.mu.Unlock()
	}
}

// firstOf keeps the first error seen.
func firstOf(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// diagnose turns err into a *ConnError when it comes from credentials or
// certificates, and returns it unchanged otherwise.
func (w *connWatch) diagnose(err error, c Config, brokers []string) error {
	w.mu.Lock()
	saslErr, tlsErr := w.saslErr, w.tlsErr
	w.mu.Unlock()
	connErr := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, net.ErrClosed)
	var firstEOF *kgo.ErrFirstReadEOF
	user := fmt.Sprintf("SASL authentication failed for user %s (%s)", c.SASL.Username, c.SASL.Mechanism)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return &ConnError{Brokers: brokers, Reason: user, Err: err}
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return &ConnError{Brokers: brokers, Reason: "the brokers do not offer SASL mechanism " + c.SASL.Mechanism, Err: err}
	case tlsFailure(err):
		return &ConnError{Brokers: brokers, Reason: "TLS handshake failed", Err: tlsHint(err)}
	case connErr && saslErr != nil:
		return &ConnError{Brokers: brokers, Reason: user,
			Err: fmt.Errorf("the broker closed the connection while authenticating, as brokers do on a wrong user name or password: %w", saslErr)}
	case connErr && tlsErr != nil:
		return &ConnError{Brokers: brokers, Reason: "TLS handshake failed", Err: tlsHint(tlsErr)}
	case errors.As(err, &firstEOF):
		return &ConnError{Brokers: brokers, Reason: "the brokers closed the connection at once", Err: err}
	}
	return err
}

// tlsFailure reports whether err is a failed TLS handshake, either side's
// refusal.
func tlsFailure(err error) bool {
	if err == nil {
		return false
	}
	var (
		verify *tls.CertificateVerificationError
		header tls.RecordHeaderError
		op     *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &header) ||
		// How crypto/tls reports an alert the other side sent: the broker
		// refused our certificate, or that we sent none.
		errors.As(err, &op) && op.Op == "remote error"
}

// tlsHint adds to a failed handshake the setting that usually fixes it.
func tlsHint(err error) error {
	var (
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		header    tls.RecordHeaderError
		op        *net.OpError
	)
	switch {
	case errors.As(err, &authority):
		return fmt.Errorf("%w (kafka.tls.ca_file must hold the CA that signed the brokers' certificates; empty, the system's roots are used)", err)
	case errors.As(err, &host):
		return fmt.Errorf("%w (kafka.tls.server_name can name what the certificates hold)", err)
	case errors.As(err, &header):
		return fmt.Errorf("%w (the brokers do not speak TLS on this port)", err)
	case errors.As(err, &op) && op.Op == "remote error":
		return fmt.Errorf("%w (the brokers refused the client certificate of kafka.tls.cert_file and key_file, or its absence)", err)
	}
	return err
}
