package fairrw

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// TLS: what a Client refuses to do, and how it explains the server's
// refusals (docs/acl.md, "TLS").

// tlsRefusal returns the TLS alert with which the server refused a
// connection of opt that failed with err, or nil. Under TLS 1.3 the server
// checks the client's certificate after the handshake that the client saw
// succeed, and its alert races the client's first write: the client sees
// the alert, or only a reset connection. A reset or closed TLS connection
// is then tried once more, reading the server's alert, if any, as the
// client's first write would have.
func tlsRefusal(err error, opt rueidis.ClientOption) error {
	switch {
	case err == nil || opt.TLSConfig == nil:
		return nil
	case tlsRefused(err):
		return err
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return probeTLS(opt)
	}
	return nil
}

// probeTLS makes a TLS connection to each address of opt, and waits a
// moment for the server's alert. It returns the first alert, or nil.
// Sentinel and a dialer of the caller's (DialCtxFn) are not probed.
func probeTLS(opt rueidis.ClientOption) error {
	if opt.DialCtxFn != nil || opt.DialFn != nil || opt.Sentinel.MasterSet != "" {
		return nil
	}
	timeout := opt.Dialer.Timeout
	if timeout <= 0 {
		timeout = rueidis.DefaultDialTimeout
	}
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: opt.TLSConfig.Clone()}
	for _, addr := range opt.InitAddress {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		cancel()
		if err != nil {
			if tlsRefused(err) {
				return err
			}
			continue
		}
		_ = conn.SetReadDeadline(time.Now().Add(min(timeout, tlsProbeWait)))
		_, err = conn.Read(make([]byte, 1))
		_ = conn.Close()
		if tlsRefused(err) {
			return err
		}
	}
	return nil
}

// tlsProbeWait bounds how long probeTLS waits for an alert: a server that
// accepted the connection sends nothing until asked.
const tlsProbeWait = time.Second

// tlsRefusalHint says what most often makes a Redis server refuse the TLS
// handshake of a client with cfg with the alert err.
func tlsRefusalHint(err error, cfg *tls.Config) string {
	msg := err.Error()
	noCert := len(cfg.Certificates) == 0 && cfg.GetClientCertificate == nil
	switch {
	case strings.Contains(msg, "protocol version"):
		return "the server refused the TLS handshake: no TLS version in common (the TLSConfig's MinVersion and MaxVersion, the server's tls-protocols)"
	case noCert && (strings.Contains(msg, "certificate") || strings.Contains(msg, "handshake failure") || strings.Contains(msg, "access denied")):
		return "the server refused the TLS handshake: Redis asks every client for a certificate unless tls-auth-clients is no or optional " +
			"(it is yes by default): give one signed by a CA of the server's tls-ca-cert-file in TLSConfig.Certificates (docs/acl.md, TLS)"
	case strings.Contains(msg, "certificate") || strings.Contains(msg, "access denied"):
		return "the server refused the TLS handshake: is the client certificate signed by a CA of the server's tls-ca-cert-file, and valid now? (docs/acl.md, TLS)"
	}
	return "the server refused the TLS handshake (docs/acl.md, TLS)"
}

// plainToTLS returns an error saying so when a connection of opt, without
// TLS, failed with err because the server speaks TLS on that port: it
// closes a connection that does not start with a TLS handshake, and the
// client sees only a reset. The probe makes a TLS handshake without
// verifying the server (it only asks whether it speaks TLS) and sends
// nothing.
func plainToTLS(err error, opt rueidis.ClientOption) error {
	if err == nil || opt.TLSConfig != nil || opt.DialCtxFn != nil || opt.DialFn != nil || opt.Sentinel.MasterSet != "" ||
		!(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil
	}
	timeout := opt.Dialer.Timeout
	if timeout <= 0 {
		timeout = rueidis.DefaultDialTimeout
	}
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: min(timeout, tlsProbeWait)},
		Config: &tls.Config{InsecureSkipVerify: true}} // a probe: it sends nothing
	for _, addr := range opt.InitAddress {
		ctx, cancel := context.WithTimeout(context.Background(), min(timeout, tlsProbeWait))
		conn, perr := dialer.DialContext(ctx, "tcp", addr)
		cancel()
		if perr == nil {
			_ = conn.Close()
			return fmt.Errorf("%w (the server at %s speaks TLS: use a rediss:// URL, or a TLSConfig in WithClientOption; docs/acl.md, TLS)", err, addr)
		}
	}
	return nil
}

// plainServer returns the address of opt at which a server answers Redis's
// plain protocol (a PING), or "": a TLS Client whose handshake got no
// answer from it talks TLS to a server without it, which waits for a line
// that a TLS handshake does not end. A stalled endpoint answers the probe
// no more than the handshake. Sentinel and a dialer of the caller's
// (DialCtxFn) are not probed.
func plainServer(opt rueidis.ClientOption) string {
	if opt.DialCtxFn != nil || opt.DialFn != nil || opt.Sentinel.MasterSet != "" {
		return ""
	}
	timeout := opt.Dialer.Timeout
	if timeout <= 0 {
		timeout = rueidis.DefaultDialTimeout
	}
	wait := min(timeout, tlsProbeWait)
	for _, addr := range opt.InitAddress {
		conn, err := net.DialTimeout("tcp", addr, wait)
		if err != nil {
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(wait))
		_, err = conn.Write([]byte("PING\r\n"))
		reply := make([]byte, 1)
		if err == nil {
			_, err = io.ReadFull(conn, reply)
		}
		_ = conn.Close()
		if err == nil && (reply[0] == '+' || reply[0] == '-') {
			return addr // "+PONG", or "-NOAUTH ...": Redis without TLS
		}
	}
	return ""
}
