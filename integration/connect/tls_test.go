package connect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// pool is a cert pool that trusts only ca.
func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// serverFiles writes a server certificate for 127.0.0.1 signed by ca, its
// key and ca's certificate into dir, and returns their paths.
func (ca *testCA) serverFiles(t *testing.T, dir string) (certFile, keyFile, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "redis"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, caFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.crt")
	for path, data := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		caFile:   ca.pem,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile, caFile
}

// startTLSRedis starts a redis-server serving TLS (certificates signed by
// ca) on a port of its own, beside the plain port the harness pings, and
// returns the TLS address.
func startTLSRedis(t *testing.T, ca *testCA) string {
	t.Helper()
	certFile, keyFile, caFile := ca.serverFiles(t, t.TempDir())
	port, err := redisnet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	redistest.StartProcess(t, "--tls-port", strconv.Itoa(port), "--tls-cert-file", certFile,
		"--tls-key-file", keyFile, "--tls-ca-cert-file", caFile, "--tls-auth-clients", "no")
	return "127.0.0.1:" + strconv.Itoa(port)
}

// TestTLS: against a real redis-server serving TLS with certificates made
// here, and certificate verification on, every policy locks, unlocks,
// renews (a lease four times shorter than the hold) and wakes a waiter of
// another Client; a Client that trusts another CA is refused with the
// certificate error, which names the address, and changes nothing.
func TestTLS(t *testing.T) {
	ca := newTestCA(t, "fairrw test CA")
	addr := startTLSRedis(t, ca)
	option := func(pool *x509.CertPool) rueidis.ClientOption {
		return rueidis.ClientOption{InitAddress: []string{addr}, TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			ctl := lateness.Start(t)
			ctx := itest.TestCtx(t)
			// A second, not a tiny lease: a loaded machine running a renewal
			// late must not lose the hold this test needs alive.
			lease := time.Second
			a, err := fairrw.New(fairrw.WithClientOption(option(ca.pool())), fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := fairrw.New(fairrw.WithClientOption(option(ca.pool())), fairrw.WithPolicy(p))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			name := "tls:" + p.String()
			held, err := a.RWMutex(name).Lock(ctx)
			if err != nil {
				t.Fatalf("Lock over TLS: %v", err)
			}
			waited := make(chan error, 1)
			var granted time.Time
			go func() {
				l, err := b.RWMutex(name).Lock(ctx)
				granted = time.Now()
				if err == nil {
					err = l.Unlock(ctx)
				}
				waited <- err
			}()
			// Held for four leases: the watchdog must renew it over TLS.
			time.Sleep(4 * lease)
			select {
			case <-held.Done():
				t.Fatalf("the lease was lost over TLS: %v", held.Err())
			default:
			}
			select {
			case err := <-waited:
				t.Fatalf("the waiter of another Client returned while the lock was held: %v", err)
			default:
			}
			released := time.Now()
			if err := held.Unlock(ctx); err != nil {
				t.Fatalf("Unlock over TLS: %v", err)
			}
			if err := <-waited; err != nil {
				t.Fatalf("the waiter: %v", err)
			}
			// Past a second, its wake-up did not come over TLS.
			ctl.Within("the waiter granted after the release", granted.Sub(released), time.Second)
			t.Logf("%s: renewed over %v, waiter granted %v after the release", p, 4*lease, granted.Sub(released).Round(time.Microsecond))
		})
	}

	t.Run("wrong CA", func(t *testing.T) {
		other := newTestCA(t, "another CA")
		c, err := fairrw.New(fairrw.WithClientOption(option(other.pool())))
		if err == nil {
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err = c.RWMutex("tls:wrong-ca").Lock(ctx)
		}
		var unknown x509.UnknownAuthorityError
		var verify *tls.CertificateVerificationError
		if !errors.As(err, &unknown) && !errors.As(err, &verify) {
			t.Fatalf("a Client trusting another CA: %v, want the certificate verification error", err)
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("the error does not name the address %s: %v", addr, err)
		}
		if errors.Is(err, fairrw.ErrUnavailable) {
			t.Errorf("a certificate refusal is not a Redis that is momentarily away: %v", err)
		}
		t.Logf("refused: %v", err)
		// Nothing was written: a trusted Client finds the name free.
		good, err := fairrw.New(fairrw.WithClientOption(option(ca.pool())))
		if err != nil {
			t.Fatal(err)
		}
		defer good.Close()
		info, err := good.Inspect(itest.TestCtx(t), "tls:wrong-ca")
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Holders) != 0 || len(info.WaitingWriters) != 0 || info.Policy != "" {
			t.Fatalf("the refused Client left a trace: %v", info)
		}
	})
}
