package mph2

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"
)

// closeNotingConn reports its Close.
type closeNotingConn struct {
	net.Conn
	closed chan struct{}
}

func (c *closeNotingConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return c.Conn.Close()
}

// TestCloseWhileDialing: a connection whose dial finishes after the
// Client was closed (a redial in flight) is closed too, not left open.
func TestCloseWhileDialing(t *testing.T) {
	base := startServer(t, nil)
	u, err := url.Parse(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	dialed := make(chan *closeNotingConn, 1)
	c := &Client{Paths: []Path{{Name: "a", Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-release
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &closeNotingConn{Conn: nc, closed: make(chan struct{})}
		dialed <- cc
		return cc, nil
	}}}}
	pc := c.conn(0, u)
	c.Close()
	close(release)
	<-pc.ready
	if pc.err != nil {
		t.Fatalf("dial: %v", pc.err)
	}
	cc := <-dialed
	select {
	case <-cc.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection dialed after Close is still open 5 s later")
	}
}
