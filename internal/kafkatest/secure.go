package kafkatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Certs are a throwaway CA, a broker certificate and a client
// certificate, made for one test and written as PEM files under its
// t.TempDir().
type Certs struct {
	// ServerName is the DNS name in the broker certificate, which also
	// holds 127.0.0.1.
	ServerName string
	// CAFile, CertFile and KeyFile are the CA that signed both
	// certificates, and the client certificate with its key.
	CAFile, CertFile, KeyFile string

	pool           *x509.CertPool
	server, client tls.Certificate
}

// NewCerts makes a CA and the certificates it signs.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{
		ServerName: "kafka.jobdrop.test",
		CAFile:     filepath.Join(dir, "ca.pem"),
		CertFile:   filepath.Join(dir, "client.pem"),
		KeyFile:    filepath.Join(dir, "client-key.pem"),
	}
	ca, caKey := newCert(t, nil, nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "jobdrop test CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	})
	server, serverKey := newCert(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: c.ServerName},
		DNSNames:    []string{c.ServerName},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	client, clientKey := newCert(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "jobdrop"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	writePEM(t, c.CAFile, "CERTIFICATE", ca.Raw)
	writePEM(t, c.CertFile, "CERTIFICATE", client.Raw)
	writePEM(t, c.KeyFile, "PRIVATE KEY", marshalKey(t, clientKey))
	c.pool = x509.NewCertPool()
	c.pool.AddCert(ca)
	c.server = tls.Certificate{Certificate: [][]byte{server.Raw}, PrivateKey: serverKey, Leaf: server}
	c.client = tls.Certificate{Certificate: [][]byte{client.Raw}, PrivateKey: clientKey, Leaf: client}
	return c
}

// SecureCluster is a cluster that only talks TLS, only to clients that
// present a certificate of its CA, and only once they authenticate with
// SASL: what production clusters often demand.
type SecureCluster struct {
	*Certs
	Brokers []string
	// Mechanism, User and Password are the SASL credentials of the main
	// user, a SCRAM-SHA-512 one.
	Mechanism, User, Password string
	// Others are users of the other mechanisms, one each: PLAIN and
	// SCRAM-SHA-256.
	Others []SASLUser
}

// SASLUser is one user of a SecureCluster.
type SASLUser struct{ Mechanism, User, Password string }

// StartSecure starts a three-broker cluster requiring TLS with client
// certificates and SASL (a user for each of SCRAM-SHA-512, SCRAM-SHA-256
// and PLAIN), closed with the test; opts add to its options.
func StartSecure(t testing.TB, opts ...kfake.Opt) *SecureCluster {
	t.Helper()
	s := &SecureCluster{
		Certs:     NewCerts(t),
		Mechanism: "SCRAM-SHA-512",
		User:      "jobdrop",
		Password:  "s3cret-for-this-test",
		Others: []SASLUser{
			{Mechanism: "PLAIN", User: "jobdrop-plain", Password: "plain-s3cret"},
			{Mechanism: "SCRAM-SHA-256", User: "jobdrop-sha256", Password: "sha256-s3cret"},
		},
	}
	users := []kfake.Opt{kfake.Superuser(s.Mechanism, s.User, s.Password)}
	for _, u := range s.Others {
		users = append(users, kfake.Superuser(u.Mechanism, u.User, u.Password))
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(3),
		kfake.GroupMinSessionTimeout(time.Second),
		kfake.TLS(&tls.Config{
			Certificates: []tls.Certificate{s.server},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    s.pool,
			MinVersion:   tls.VersionTLS12,
		}),
		kfake.EnableSASL(),
	}, append(users, opts...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s.Brokers = c.ListenAddrs()
	return s
}

// ClientOpts reach the cluster with its CA, the client certificate and
// the user's credentials. They are built here rather than by the code
// under test, so that a test reading back what jobdrop wrote is an
// independent witness.
func (s *SecureCluster) ClientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(s.Brokers...),
		kgo.DialTLSConfig(&tls.Config{RootCAs: s.pool, Certificates: []tls.Certificate{s.client}, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()),
	}
}

// Env is the JOBDROP_ variables that make jobdrop reach the cluster, all
// but the password, which a test sets as it likes
// (JOBDROP_KAFKA_SASL_PASSWORD or _PASSWORD_FILE).
func (s *SecureCluster) Env() []string {
	return []string{
		"JOBDROP_KAFKA_BROKERS=" + strings.Join(s.Brokers, ","),
		"JOBDROP_KAFKA_TLS_ENABLED=true",
		"JOBDROP_KAFKA_TLS_CA_FILE=" + s.CAFile,
		"JOBDROP_KAFKA_TLS_CERT_FILE=" + s.CertFile,
		"JOBDROP_KAFKA_TLS_KEY_FILE=" + s.KeyFile,
		"JOBDROP_KAFKA_SASL_MECHANISM=" + s.Mechanism,
		"JOBDROP_KAFKA_SASL_USERNAME=" + s.User,
	}
}

// newCert makes a certificate from tmpl with a fresh key, signed by
// parent, or self-signed when parent is nil.
func newCert(t testing.TB, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func marshalKey(t testing.TB, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
