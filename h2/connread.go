package h2

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readBufSize is the read buffer of a connection that is receiving.
const readBufSize = 16 << 10

var readBufPool = sync.Pool{New: func() any { return new([readBufSize]byte) }}

// connReader buffers a connection's input like a bufio.Reader, but an idle
// connection holds no buffer: on a TCP socket it reads in the runtime
// poller's callback and, when the socket is empty, gives its buffer back to
// a pool while it waits (h2o allocates its buffers lazily the same way). On
// other connections (TLS, pipes) it holds the buffer while a read blocks;
// a TLS connection that parks gives it back first (poll).
type connReader struct {
	nc  net.Conn
	pre sniffedConn     // nc when it returns bytes of its own first, else nil
	rc  syscall.RawConn // the TCP socket under nc (TLS's too), else nil
	// tls is nc when it is TLS over rc: reads go through it, not to rc.
	tls  *tls.Conn
	buf  *[readBufSize]byte
	r, w int
	// pending is prefill's error, for the next Read: errors are reported
	// once by the socket (a reset reads as EOF afterwards).
	pending error
	// readRaw's callback, made once, and what it was asked and got: a
	// closure made per read, with what it captured, cost up to three
	// allocations.
	rawFn   func(fd uintptr) bool
	rawWait bool
	rawN    int
	rawErr  error
}

// sniffedConn is a wrapper that returns bytes read earlier (a server's
// protocol sniffing) before its connection's; once none is left, reading
// the connection under it is the same as reading it. tls.Conn has NetConn
// but no Buffered: its connection carries ciphertext.
type sniffedConn interface {
	NetConn() net.Conn
	Buffered() int
}

func newConnReader(nc net.Conn) *connReader {
	cr := &connReader{nc: nc}
	inner := nc
	if p, ok := nc.(sniffedConn); ok {
		cr.pre, inner = p, p.NetConn()
	} else if tc, ok := nc.(*tls.Conn); ok {
		cr.tls, inner = tc, tc.NetConn()
		if r, ok := inner.(*recordConn); ok {
			inner = r.Conn
		}
	}
	if tc, ok := inner.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			cr.rc = rc
			cr.rawFn = cr.rawRead
		}
	}
	return cr
}

func (cr *connReader) Read(p []byte) (int, error) {
	if cr.r == cr.w {
		if err := cr.pending; err != nil {
			cr.pending = nil
			return 0, err
		}
		if err := cr.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, cr.buf[cr.r:cr.w])
	cr.r += n
	return n, nil
}

// prefill waits for input and reads it when nothing is buffered; its error
// is the next Read's.
func (cr *connReader) prefill() {
	if cr.r == cr.w && cr.pending == nil {
		cr.pending = cr.fill()
	}
}

// poll reads what a TCP socket holds without waiting, and reports whether
// a Read would return at once (bytes or an error). Over TLS it reads with
// a deadline in the past, which makes crypto/tls return what it holds
// decrypted or in whole records without touching the socket, else the
// deadline's error, which it does not keep; then, since that read never
// reaches the socket, whether the socket holds bytes (a record on its way:
// the reader waits for it rather than park on a readable socket). A
// partial record crypto/tls holds is completed by bytes that make the
// socket readable. Its buffer goes back when nothing came.
func (cr *connReader) poll() bool {
	if cr.r != cr.w || cr.pending != nil {
		return true
	}
	cr.r, cr.w = 0, 0
	if cr.tls != nil {
		cr.tls.SetReadDeadline(time.Unix(1, 0))
		err := cr.fill()
		cr.tls.SetReadDeadline(time.Time{})
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			cr.pending = err
			return true
		}
		cr.release()
		return cr.socketReadable()
	}
	err := cr.readRaw(false)
	if err == errWouldBlock {
		return false
	}
	cr.pending = err
	return true
}

// framePayload consumes the next frame and returns its payload if all of
// it is buffered and the payload is at most max bytes; the payload is
// valid until the next read.
func (cr *connReader) framePayload(max uint32) ([]byte, bool) {
	if cr.w-cr.r < frameHeaderLen {
		return nil, false
	}
	b := cr.buf[cr.r:cr.w]
	n := parseFrameHeader(b).length
	if n > max || uint32(len(b)) < frameHeaderLen+n {
		return nil, false
	}
	cr.r += frameHeaderLen + int(n)
	return b[frameHeaderLen : frameHeaderLen+n], true
}

// Buffered is how many bytes a Read returns without reading the connection.
func (cr *connReader) Buffered() int { return cr.w - cr.r }

// Peek returns the next n bytes (at most readBufSize) without consuming them.
func (cr *connReader) Peek(n int) ([]byte, error) {
	for cr.w-cr.r < n {
		if cr.buf != nil && cr.r > 0 {
			cr.w = copy(cr.buf[:], cr.buf[cr.r:cr.w])
			cr.r = 0
		}
		if err := cr.fill(); err != nil {
			return nil, err
		}
	}
	return cr.buf[cr.r : cr.r+n], nil
}

// fill reads more input after what is buffered; it returns an error only
// when it read nothing.
func (cr *connReader) fill() error {
	if cr.r == cr.w {
		cr.r, cr.w = 0, 0
	}
	if cr.rc == nil || cr.tls != nil || cr.pre != nil && cr.pre.Buffered() > 0 {
		cr.take()
		n, err := cr.nc.Read(cr.buf[cr.w:])
		cr.w += n
		if n > 0 {
			return nil
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	return cr.readRaw(true)
}

// socketReadable reports whether the socket has bytes (or its end) to read,
// without reading them.
func (cr *connReader) socketReadable() bool {
	readable := true // if the socket cannot be asked, do not park on it
	cr.rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		readable = err != unix.EAGAIN
	})
	return readable
}

// errWouldBlock: the socket had nothing to read and the caller would not wait.
var errWouldBlock = errors.New("h2: nothing to read yet")

// readRaw reads the TCP socket after what is buffered, in the runtime
// poller's callback; without wait it returns errWouldBlock at once if the
// socket is empty.
func (cr *connReader) readRaw(wait bool) error {
	cr.rawWait, cr.rawN, cr.rawErr = wait, 0, nil
	err := cr.rc.Read(cr.rawFn)
	n, rerr := cr.rawN, cr.rawErr
	cr.rawErr = nil
	if err == nil && rerr == syscall.EAGAIN { // only without wait
		return errWouldBlock
	}
	if (err != nil || rerr != nil || n == 0) && cr.w == 0 {
		cr.release() // the end, or an error: no bytes to keep
	}
	switch {
	case err != nil:
		// A deadline or a close: the net package's error, as Read would say.
		return &net.OpError{Op: "read", Net: "tcp", Source: cr.nc.LocalAddr(), Addr: cr.nc.RemoteAddr(), Err: unwrapOp(err)}
	case rerr != nil:
		return &net.OpError{Op: "read", Net: "tcp", Source: cr.nc.LocalAddr(), Addr: cr.nc.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
	case n == 0:
		return io.EOF
	}
	cr.w += n
	return nil
}

// rawRead is readRaw's callback: one read of the socket, which reports
// whether the read is over (not: wait for the socket).
func (cr *connReader) rawRead(fd uintptr) bool {
	cr.take()
	for {
		cr.rawN, cr.rawErr = syscall.Read(int(fd), cr.buf[cr.w:])
		if cr.rawErr != syscall.EINTR {
			break
		}
	}
	if cr.rawErr == syscall.EAGAIN {
		if cr.w == 0 {
			cr.release() // nothing buffered: wait without a buffer
		}
		return !cr.rawWait
	}
	return true
}

// unwrapOp drops the raw connection's own OpError around err.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

func (cr *connReader) take() {
	if cr.buf == nil {
		cr.buf = readBufPool.Get().(*[readBufSize]byte)
	}
}

// release gives the buffer back; the caller has consumed what it held.
func (cr *connReader) release() {
	if cr.buf != nil {
		readBufPool.Put(cr.buf)
		cr.buf, cr.r, cr.w = nil, 0, 0
	}
}
