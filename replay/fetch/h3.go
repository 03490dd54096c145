package fetch

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
)

// h3 is HTTP/3 on one QUIC connection (quic-go). QUIC streams are
// independent, so a lost packet stalls only the streams whose data it held.
type h3 struct {
	cfg  Config
	tr   http3.Transport
	conn lazyConn[*h3conn]
}

type h3conn struct {
	pc net.PacketConn
	qc *quic.Conn
	cc *http3.ClientConn
}

func newH3(cfg Config) *h3 { return &h3{cfg: cfg} }

func (h *h3) dial(ctx context.Context) (*h3conn, error) {
	addr, err := net.ResolveUDPAddr("udp", h.cfg.Addr)
	if err != nil {
		return nil, err
	}
	pc, err := h.cfg.ListenUDP()
	if err != nil {
		return nil, err
	}
	conf := tlsConfig(h.cfg.TLSConfig, http3.NextProtoH3)
	if conf.ServerName == "" {
		conf.ServerName, _, _ = net.SplitHostPort(h.cfg.Addr)
	}
	// With $QLOGDIR set, the connection writes a qlog trace there.
	qc, err := quic.Dial(ctx, pc, addr, conf, &quic.Config{Tracer: qlog.DefaultConnectionTracer})
	if err != nil {
		pc.Close()
		return nil, err
	}
	return &h3conn{pc: pc, qc: qc, cc: h.tr.NewClientConn(qc)}, nil
}

func (h *h3) roundTrip(req *http.Request) (*http.Response, int, error) {
	c, err := h.conn.get(func() (*h3conn, error) { return h.dial(req.Context()) })
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.cc.RoundTrip(req)
	return resp, 0, err
}

func (h *h3) opened() int { return h.conn.opened() }

func (h *h3) close() error {
	c, ok := h.conn.take()
	if !ok {
		return nil
	}
	return errors.Join(c.qc.CloseWithError(0, ""), c.pc.Close())
}
