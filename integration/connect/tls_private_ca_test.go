package connect

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/holder"
	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/fairrw/rwlock/internal/wire"
)

// clientCert is a client certificate signed by ca, for the common name cn.
func (ca *testCA) clientCert(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// startTLSRedisWith starts a redis-server serving TLS with a certificate
// for 127.0.0.1 signed by ca, with extra arguments (tls-auth-clients, say),
// and returns the TLS address and the CA file the server trusts.
func startTLSRedisWith(t *testing.T, ca *testCA, extra ...string) (addr, caFile string) {
	t.Helper()
	certFile, keyFile, caFile := ca.serverFiles(t, t.TempDir())
	port, err := redisnet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	redistest.StartProcess(t, append([]string{"--tls-port", strconv.Itoa(port), "--tls-cert-file", certFile,
		"--tls-key-file", keyFile, "--tls-ca-cert-file", caFile}, extra...)...)
	return "127.0.0.1:" + strconv.Itoa(port), caFile
}

// tlsLockWorks: two Clients of opt lock name in turn, the second woken by
// the first's release (not its timer), and Inspect sees the hold.
func tlsLockWorks(t *testing.T, opt rueidis.ClientOption, name string) {
	t.Helper()
	ctx := itest.TestCtx(t)
	clients := make([]*fairrw.Client, 2)
	for i := range clients {
		c, err := fairrw.New(fairrw.WithClientOption(opt))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	l, err := clients[0].RWMutex(name).Lock(ctx)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		w, err := clients[1].RWMutex(name).Lock(ctx)
		if err == nil {
			if by := hidden.WokenBy(w); by == "timer" || by == "" {
				err = errors.New("the waiter was woken by " + by + ", want the release")
			}
			if uerr := w.Unlock(ctx); err == nil {
				err = uerr
			}
		}
		got <- err
	}()
	info, err := clients[1].Inspect(ctx, name)
	if err != nil || len(info.Holders) != 1 {
		t.Fatalf("Inspect: %+v, %v; want one holder", info, err)
	}
	// The waiter has subscribed, on a connection of its Client's own that
	// it dials first (over TLS, a handshake more), and queued.
	raw, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	channel := wire.Fair(name).Channel
	for n := int64(0); n < 1; time.Sleep(5 * time.Millisecond) {
		counts, err := raw.Do(ctx, raw.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		n = counts[channel]
	}
	time.Sleep(50 * time.Millisecond)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}

// newOrFirstCall is New with opts, then, if New returned a Client, a Lock
// within two seconds: the error a user meets first.
func newOrFirstCall(opts ...fairrw.Option) error {
	c, err := fairrw.New(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = c.RWMutex("tls:refused").Lock(ctx)
	if err == nil {
		return errors.New("the Lock was granted")
	}
	return err
}

// TestTLSPrivateCA: a redis-server serving TLS with certificates of a CA
// made here.
//
// Without client authentication: a rediss:// URL trusts the CA given in
// SSL_CERT_FILE (in a child process, where Go reads it: the child takes a
// lock, and this process, trusting the CA by TLSConfig, sees it held); the
// same URL without the CA is refused with Go's certificate error, not
// ErrUnavailable; skip_verify is refused by WithURL with ErrInvalidOption
// (skip_verify=false is not); InsecureSkipVerify given in code connects,
// and New logs a warning; a certificate for another host name is refused;
// a Client without TLS fails New saying that the server speaks TLS.
//
// With client authentication (Redis's default, tls-auth-clients yes),
// over TLS 1.2 and 1.3: a Client without a certificate fails New itself,
// at once, with the server's alert and a hint naming client certificates,
// not ErrUnavailable; one with a certificate of another CA fails New with
// its own hint; one with a certificate of the server's CA locks, wakes a
// waiter and inspects.
func TestTLSPrivateCA(t *testing.T) {
	ca := newTestCA(t, "fairrw private CA")
	t.Run("server only", func(t *testing.T) {
		addr, caFile := startTLSRedisWith(t, ca, "--tls-auth-clients", "no")
		url := "rediss://" + addr
		name := "tls:cert-file"

		child := holder.Start(t, holder.Spec{URL: url, Env: []string{"SSL_CERT_FILE=" + caFile, "SSL_CERT_DIR=" + filepath.Dir(caFile)},
			Policy: fairrw.WriterPreferring().String(), Name: name, Write: true, Lease: 10 * time.Second})
		trusted := rueidis.ClientOption{InitAddress: []string{addr}, TLSConfig: &tls.Config{RootCAs: ca.pool(), MinVersion: tls.VersionTLS12}}
		c, err := fairrw.New(fairrw.WithClientOption(trusted))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := itest.TestCtx(t)
		info, err := c.Inspect(ctx, name)
		if err != nil || len(info.Holders) != 1 || info.Holders[0].Mode != fairrw.Write || info.Token != child.Token {
			t.Fatalf("the lock the child took with rediss:// and SSL_CERT_FILE: %+v, %v; want one holder of token %d", info, err, child.Token)
		}
		child.Release(t)

		// This process does not trust the CA: the system's roots do not
		// hold it.
		err = newOrFirstCall(fairrw.WithURL(url))
		var unknown x509.UnknownAuthorityError
		var verify *tls.CertificateVerificationError
		if !errors.As(err, &unknown) && !errors.As(err, &verify) {
			t.Errorf("rediss:// without the CA: %v, want the certificate verification error", err)
		}
		if errors.Is(err, fairrw.ErrUnavailable) {
			t.Errorf("rediss:// without the CA: %v is ErrUnavailable", err)
		}

		for _, q := range []string{"?skip_verify=true", "?skip_verify", "?skip_verify=1"} {
			_, err := fairrw.New(fairrw.WithURL(url + q))
			if !errors.Is(err, fairrw.ErrInvalidOption) || !strings.Contains(err.Error(), "skip_verify") {
				t.Errorf("WithURL(%q): %v, want ErrInvalidOption naming skip_verify", url+q, err)
			}
		}
		if err := newOrFirstCall(fairrw.WithURL(url + "?skip_verify=false")); errors.Is(err, fairrw.ErrInvalidOption) {
			t.Errorf("WithURL(skip_verify=false): %v", err)
		}

		var logged bytes.Buffer
		insecure := rueidis.ClientOption{InitAddress: []string{addr}, TLSConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
		ic, err := fairrw.New(fairrw.WithClientOption(insecure), fairrw.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
		if err != nil {
			t.Fatalf("InsecureSkipVerify in code: %v", err)
		}
		defer ic.Close()
		if err := ic.Ping(ctx); err != nil {
			t.Errorf("InsecureSkipVerify in code: Ping: %v", err)
		}
		if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "InsecureSkipVerify") {
			t.Errorf("InsecureSkipVerify in code: no warning logged: %q", logged.String())
		}

		// A Client without TLS on the TLS port: the server cuts it off,
		// and New says why, at once.
		c2, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{addr}}))
		if err == nil {
			_ = c2.Close()
			t.Errorf("New without TLS on a TLS port succeeded: want it to say the server speaks TLS")
		} else if errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), "speaks TLS") {
			t.Errorf("New without TLS on a TLS port: %v, want it to say the server speaks TLS", err)
		}

		// The certificate names 127.0.0.1, not localhost.
		_, port, _ := net.SplitHostPort(addr)
		other := rueidis.ClientOption{InitAddress: []string{net.JoinHostPort("localhost", port)}, TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}}
		err = newOrFirstCall(fairrw.WithClientOption(other))
		var host x509.HostnameError
		if !errors.As(err, &host) && !errors.As(err, &verify) {
			t.Errorf("a certificate for another host: %v, want the host name error", err)
		}
	})

	t.Run("client certificates", func(t *testing.T) {
		addr, _ := startTLSRedisWith(t, ca) // tls-auth-clients yes: Redis's default
		for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			cfg := func(certs ...tls.Certificate) rueidis.ClientOption {
				return rueidis.ClientOption{InitAddress: []string{addr},
					TLSConfig: &tls.Config{RootCAs: ca.pool(), MinVersion: v, MaxVersion: v, Certificates: certs}}
			}
			t.Run(tls.VersionName(v), func(t *testing.T) {
				c, err := fairrw.New(fairrw.WithClientOption(cfg()))
				if err == nil {
					_ = c.Close()
					t.Fatal("New without a client certificate succeeded: want the server's refusal, at once")
				}
				if errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), "tls-auth-clients") ||
					!strings.Contains(err.Error(), "TLSConfig.Certificates") || !strings.Contains(err.Error(), addr) {
					t.Errorf("New without a client certificate: %v, want the server's alert, its address and a hint naming tls-auth-clients and TLSConfig.Certificates", err)
				}
				t.Logf("without a client certificate: %v", err)

				stranger := newTestCA(t, "another CA").clientCert(t, "billing")
				_, err = fairrw.New(fairrw.WithClientOption(cfg(stranger)))
				if err == nil || errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), "client certificate signed by a CA") {
					t.Errorf("New with a certificate of another CA: %v, want the server's refusal and a hint on the certificate", err)
				}
				t.Logf("with a certificate of another CA: %v", err)

				tlsLockWorks(t, cfg(ca.clientCert(t, "billing")), "tls:client-cert:"+tls.VersionName(v))
			})
		}
	})
}
