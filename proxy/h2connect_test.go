package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/server"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Connect sends CONNECT target to the proxy at px over h2c with x/net's
// client and returns the response and the request body's writer.
func h2Connect(t *testing.T, px, target string) (*http.Response, *io.PipeWriter) {
	t.Helper()
	return h2ConnectVia(t, &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, _ string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, px)
	}}, "http://"+target)
}

// h2ConnectVia sends CONNECT url over tr.
func h2ConnectVia(t *testing.T, tr *http2.Transport, url string) (*http.Response, *io.PipeWriter) {
	t.Helper()
	t.Cleanup(tr.CloseIdleConnections)
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodConnect, url, pr)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", url, err)
	}
	t.Cleanup(func() { pw.Close(); res.Body.Close() })
	return res, pw
}

// streamConn is a CONNECT stream as the net.Conn TLS runs over.
type streamConn struct {
	io.Reader
	io.WriteCloser
}

func (streamConn) LocalAddr() net.Addr              { return targetAddr("local:0") }
func (streamConn) RemoteAddr() net.Addr             { return targetAddr("remote:0") }
func (streamConn) SetDeadline(time.Time) error      { return nil }
func (streamConn) SetReadDeadline(time.Time) error  { return nil }
func (streamConn) SetWriteDeadline(time.Time) error { return nil }

// A CONNECT over HTTP/2 (RFC 9113 8.5) is a tunnel: TLS and an HTTP
// request to a TLS origin go through it byte for byte, and the origin's
// close ends the stream (END_STREAM, no reset).
func TestProxyH2ConnectTLS(t *testing.T) {
	tlsOrigin := origin(t, true)
	res, pw := h2Connect(t, mpProxy(t), tlsOrigin)
	tunnelTLSGet(t, res, pw, tlsOrigin)
}

// shunt proxy --tls: a browser speaks HTTP/2 to the proxy over TLS (ALPN
// h2) and opens its tunnels as CONNECT streams on that connection.
func TestProxyH2ConnectOverTLSProxy(t *testing.T) {
	tlsOrigin := origin(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{{Name: "a"}, {Name: "b"}}, TLS: true, ErrorLog: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); r.Wait() })
	var proto string
	dials := 0
	tr := &http2.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DialTLSContext: func(ctx context.Context, network, _ string, cfg *tls.Config) (net.Conn, error) {
		dials++
		d := tls.Dialer{Config: cfg}
		c, err := d.DialContext(ctx, network, r.Addr)
		if err == nil {
			proto = c.(*tls.Conn).ConnectionState().NegotiatedProtocol
		}
		return c, err
	}}
	for i := 0; i < 2; i++ { // two tunnels, one connection to the proxy
		res, pw := h2ConnectVia(t, tr, "https://"+tlsOrigin)
		if proto != "h2" {
			t.Fatalf("ALPN with the proxy: %q, want h2", proto)
		}
		tunnelTLSGet(t, res, pw, tlsOrigin)
	}
	if dials != 1 {
		t.Fatalf("%d connections to the proxy for two tunnels, want 1", dials)
	}
}

// tunnelTLSGet runs TLS and an HTTP/1.1 GET through an established CONNECT
// stream and checks the body byte for byte and the stream's clean end.
func tunnelTLSGet(t *testing.T, res *http.Response, pw *io.PipeWriter, tlsOrigin string) {
	t.Helper()
	if res.StatusCode != 200 {
		t.Fatalf("CONNECT: status %d, want 200", res.StatusCode)
	}
	tc := tls.Client(streamConn{res.Body, pw}, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS handshake through the tunnel: %v", err)
	}
	const size = 1<<20 + 5
	fmt.Fprintf(tc, "GET /gen/%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", size, tlsOrigin)
	hres, err := http.ReadResponse(bufioReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(hres.Body)
	if err != nil || hres.StatusCode != 200 || len(body) != size || sha256.Sum256(body) != content.Digest(size) {
		t.Fatalf("status %d, %d bytes (%v), want 200 and /gen/%d", hres.StatusCode, len(body), err, size)
	}
	if _, err := io.ReadAll(res.Body); err != nil {
		t.Fatalf("stream after the origin closed: %v, want END_STREAM", err)
	}
}

// The application's END_STREAM half-closes the origin connection, which
// still answers; an origin that resets is CONNECT_ERROR, an application
// that resets resets the origin connection; one that cannot be reached is
// a 502.
func TestProxyH2ConnectHalfCloseAndErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	readErrs := make(chan error, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, err := io.ReadAll(c)
				if err != nil {
					readErrs <- err
					return
				}
				if string(b) == "reset" {
					c.(*net.TCPConn).SetLinger(0)
					return
				}
				fmt.Fprintf(c, "got %q", b)
			}()
		}
	}()
	px := mpProxy(t)
	t.Run("half-close", func(t *testing.T) {
		res, pw := h2Connect(t, px, ln.Addr().String())
		io.WriteString(pw, "hello")
		pw.Close()
		if b, err := io.ReadAll(res.Body); err != nil || string(b) != `got "hello"` {
			t.Fatalf("%q, %v; want the origin's answer after the END_STREAM", b, err)
		}
	})
	t.Run("origin-reset", func(t *testing.T) {
		res, pw := h2Connect(t, px, ln.Addr().String())
		io.WriteString(pw, "reset")
		pw.Close()
		_, err := io.ReadAll(res.Body)
		var se http2.StreamError
		if !errors.As(err, &se) || se.Code != http2.ErrCodeConnect {
			t.Fatalf("read error %v, want RST_STREAM CONNECT_ERROR", err)
		}
	})
	t.Run("application-reset", func(t *testing.T) {
		fr := rawH2(t, px, ":method", "CONNECT", ":authority", ln.Addr().String())
		// The response's HEADERS: the origin connection is up.
		readUntil(t, fr, func(f http2.Frame) bool { _, ok := f.(*http2.HeadersFrame); return ok })
		fr.WriteData(1, false, []byte("partial"))
		fr.WriteRSTStream(1, http2.ErrCodeCancel)
		select {
		case err := <-readErrs:
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("origin read %v, want a TCP reset", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("origin connection still open 10 s after the stream's reset")
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		dead, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead.Close()
		res, _ := h2Connect(t, px, dead.Addr().String())
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 502 || !strings.Contains(string(b), dead.Addr().String()) {
			t.Fatalf("status %d %q, want 502 naming the origin", res.StatusCode, b)
		}
	})
}

// A CONNECT with :scheme or :path, or without :authority, is malformed
// (RFC 9113 8.5): RST_STREAM with PROTOCOL_ERROR.
func TestProxyH2ConnectMalformed(t *testing.T) {
	px := mpProxy(t)
	for _, tc := range []struct {
		name   string
		fields []string
	}{
		{"scheme-path", []string{":method", "CONNECT", ":scheme", "https", ":authority", "example.com:443", ":path", "/"}},
		{"path", []string{":method", "CONNECT", ":authority", "example.com:443", ":path", "/"}},
		{"no-authority", []string{":method", "CONNECT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := rawH2(t, px, tc.fields...)
			f := readUntil(t, fr, func(f http2.Frame) bool {
				switch f.(type) {
				case *http2.RSTStreamFrame, *http2.HeadersFrame, *http2.GoAwayFrame:
					return true
				}
				return false
			})
			if f, ok := f.(*http2.RSTStreamFrame); !ok || f.StreamID != 1 || f.ErrCode != http2.ErrCodeProtocol {
				t.Fatalf("got %v, want RST_STREAM stream 1 PROTOCOL_ERROR", f)
			}
		})
	}
}

// rawH2 opens an h2c connection to px and sends stream 1's HEADERS of the
// given name, value pairs; its Framer reads what comes back.
func rawH2(t *testing.T, px string, fields ...string) *http2.Framer {
	t.Helper()
	c, err := net.Dial("tcp", px)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := 0; i < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	return fr
}

// readUntil reads frames until want takes one, and returns it.
func readUntil(t *testing.T, fr *http2.Framer, want func(http2.Frame) bool) http2.Frame {
	t.Helper()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v", err)
		}
		if want(f) {
			return f
		}
	}
}

// Interception hands terminated tunnels to a listener as connections, which
// an HTTP/2 stream is not: a CONNECT over HTTP/2 it covers is a 501.
func TestProxyH2ConnectIntercepted(t *testing.T) {
	p := &Proxy{Intercept: &Intercept{}, ErrorLog: discardLog()}
	px := serve(t, &server.Server{Handler: p})
	res, _ := h2Connect(t, px, "example.com:443")
	if b, _ := io.ReadAll(res.Body); res.StatusCode != 501 || !strings.Contains(string(b), "HTTP/1.1 CONNECT") {
		t.Fatalf("status %d %q, want 501 saying why", res.StatusCode, b)
	}
}
