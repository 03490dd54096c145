package h2

import (
	"crypto/tls"
	"net"
	"sync"
)

// TLSServer is tls.Server(c, config) for connections this package serves.
// crypto/tls writes each record (at most 16 KB) with a system call of its
// own, so one flush of the writer's 64 KB buffer took five; under the TLS
// connection, a recordConn gathers the records of each flush and writes
// them at once (issue 18). Where the connection goes on as HTTP/1.1, its
// writes pass straight through.
func TLSServer(c net.Conn, config *tls.Config) *tls.Conn {
	return tls.Server(&recordConn{Conn: c}, config)
}

// recordConn is the connection under a TLSServer connection. Between batch
// and send (the writer's flush), the records written are held, then sent
// in one write; at any other time writes go through.
type recordConn struct {
	net.Conn
	mu   sync.Mutex
	hold bool
	buf  *[]byte // the records held, from recordBufs: none while nothing is held
}

var recordBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, batchBufSize+4<<10) // a flush's records and their overhead
	return &b
}}

func (r *recordConn) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.hold {
		return r.Conn.Write(p)
	}
	if r.buf == nil {
		r.buf = recordBufs.Get().(*[]byte)
	}
	*r.buf = append(*r.buf, p...)
	return len(p), nil
}

// batch holds the records written from now on.
func (r *recordConn) batch() {
	r.mu.Lock()
	r.hold = true
	r.mu.Unlock()
}

// send writes the records held since batch in one write and stops holding.
func (r *recordConn) send() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold = false
	if r.buf == nil {
		return nil
	}
	_, err := r.Conn.Write(*r.buf)
	*r.buf = (*r.buf)[:0]
	recordBufs.Put(r.buf)
	r.buf = nil
	return err
}

// NetConn returns the connection under r, as tls.Conn does.
func (r *recordConn) NetConn() net.Conn { return r.Conn }

// recordsUnder returns the recordConn under nc, a TLSServer connection, or nil.
func recordsUnder(nc net.Conn) *recordConn {
	if tc, ok := nc.(*tls.Conn); ok {
		r, _ := tc.NetConn().(*recordConn)
		return r
	}
	return nil
}
