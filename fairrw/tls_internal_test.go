package fairrw

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// selfSigned is a certificate for 127.0.0.1 that is its own CA.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// tlsServer serves TLS 1.3 on a loopback port with cert, asking clients
// for a certificate when clientAuth says so; every connection is read
// until the client closes it. It stops at the test's end.
func tlsServer(t *testing.T, cert tls.Certificate, pool *x509.CertPool, clientAuth tls.ClientAuthType) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
		ClientAuth: clientAuth, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = conn.Read(make([]byte, 1)) // the handshake, and the client's close
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// A reset TLS connection is probed: a server that wants a client
// certificate the Client does not give answers the probe with its alert,
// which tlsRefusal returns (and unavailable then calls final); a server
// that accepts the Client sends nothing, and the reset stays a reset.
// A TLS alert needs no probe; without TLS, nothing is probed.
func TestTLSRefusalProbe(t *testing.T) {
	cert, pool := selfSigned(t)
	reset := &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	option := func(addr string) rueidis.ClientOption {
		return rueidis.ClientOption{InitAddress: []string{addr}, TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}}
	}

	strict := tlsServer(t, cert, pool, tls.RequireAndVerifyClientCert)
	err := tlsRefusal(reset, option(strict))
	if !tlsRefused(err) || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("a reset from a server that wants a client certificate: %v, want its alert", err)
	}
	if class, explained := explainConnect(strict, reset, option(strict)); class == classRetry || !errors.Is(explained, ErrPermission) {
		t.Errorf("the alert %v reads as Redis unavailable (class %d)", explained, class)
	}

	lenient := tlsServer(t, cert, pool, tls.NoClientCert)
	if err := tlsRefusal(reset, option(lenient)); err != nil {
		t.Errorf("a reset from a server that accepts the client: %v, want no refusal", err)
	}
	if class, explained := explainConnect(lenient, reset, option(lenient)); class != classRetry || !errors.Is(explained, ErrUnavailable) {
		t.Errorf("a reset reads as final: %v (class %d)", explained, class)
	}

	alert := &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}
	if err := tlsRefusal(alert, rueidis.ClientOption{InitAddress: []string{"127.0.0.1:1"}, TLSConfig: &tls.Config{}}); err != alert {
		t.Errorf("an alert: %v, want it as it is", err)
	}
	if err := tlsRefusal(reset, rueidis.ClientOption{InitAddress: []string{strict}}); err != nil {
		t.Errorf("a reset without TLS: %v, want no refusal", err)
	}

}

// The hint follows the alert and whether the Client gave a certificate.
func TestTLSRefusalHint(t *testing.T) {
	alert := func(msg string) error { return &net.OpError{Op: "remote error", Err: errors.New(msg)} }
	withCert := &tls.Config{Certificates: []tls.Certificate{{}}}
	for _, c := range []struct {
		alert string
		cfg   *tls.Config
		want  string
	}{
		{"tls: certificate required", &tls.Config{}, "tls-auth-clients"},
		{"tls: handshake failure", &tls.Config{}, "tls-auth-clients"},
		{"tls: unknown certificate authority", withCert, "client certificate signed by"},
		{"tls: bad certificate", withCert, "client certificate signed by"},
		{"tls: protocol version not supported", &tls.Config{}, "no TLS version in common"},
		{"tls: internal error", &tls.Config{}, "refused the TLS handshake (docs/acl.md"},
	} {
		if hint := tlsRefusalHint(alert(c.alert), c.cfg); !strings.Contains(hint, c.want) {
			t.Errorf("%s, %d client certificates: %q, want %q in it", c.alert, len(c.cfg.Certificates), hint, c.want)
		}
	}
}

// A plain connection reset by a server that speaks TLS on the port says
// so; one reset by a server that does not, or that failed otherwise, is
// left as it was.
func TestPlainToTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	tlsAddr := tlsServer(t, cert, pool, tls.NoClientCert)
	err := plainToTLS(reset, rueidis.ClientOption{InitAddress: []string{tlsAddr}})
	if err == nil || !strings.Contains(err.Error(), "speaks TLS") || !strings.Contains(err.Error(), "rediss://") {
		t.Fatalf("a plain connection reset by a TLS server: %v, want it said", err)
	}
	if class, explained := explainConnect(tlsAddr, reset, rueidis.ClientOption{InitAddress: []string{tlsAddr}}); class == classRetry || !errors.Is(explained, ErrInvalidOption) {
		t.Errorf("a server that speaks TLS reads as unavailable: %v (class %d)", explained, class)
	}
	ln, lerr := net.Listen("tcp", "127.0.0.1:0") // accepts and closes: no TLS
	if lerr != nil {
		t.Fatal(lerr)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	defer func() { _ = ln.Close(); <-done }()
	if err := plainToTLS(reset, rueidis.ClientOption{InitAddress: []string{ln.Addr().String()}}); err != nil {
		t.Errorf("a plain server: %v, want nothing said", err)
	}
	if err := plainToTLS(errors.New("WRONGPASS"), rueidis.ClientOption{InitAddress: []string{tlsAddr}}); err != nil {
		t.Errorf("another error: %v, want nothing said", err)
	}
	if err := plainToTLS(reset, rueidis.ClientOption{InitAddress: []string{tlsAddr}, TLSConfig: &tls.Config{}}); err != nil {
		t.Errorf("a TLS Client: %v, want nothing said (tlsRefusal's case)", err)
	}
}

// WithURL refuses skip_verify on a rediss:// URL (whatever way it is set
// true) with ErrInvalidOption naming it and the way to do without; it
// accepts skip_verify=false, and a redis:// URL, where it means nothing.
func TestWithURLRefusesSkipVerify(t *testing.T) {
	for _, url := range []string{"rediss://127.0.0.1:6380?skip_verify=true", "rediss://127.0.0.1:6380?skip_verify", "rediss://u:secret@127.0.0.1:6380?skip_verify=1"} {
		var cfg config
		err := WithURL(url).apply(&cfg)
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "skip_verify") || !strings.Contains(err.Error(), "SSL_CERT_FILE") {
			t.Errorf("WithURL(%q): %v, want ErrInvalidOption naming skip_verify and SSL_CERT_FILE", url, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("WithURL(%q): the error holds the password: %v", url, err)
		}
	}
	for _, url := range []string{"rediss://127.0.0.1:6380?skip_verify=false", "redis://127.0.0.1:6379?skip_verify=true", "rediss://127.0.0.1:6380"} {
		var cfg config
		if err := WithURL(url).apply(&cfg); err != nil {
			t.Errorf("WithURL(%q): %v", url, err)
		}
	}
}
