package h2

import (
	"net"
)

// batchWriter buffers the writer's frames until Flush, as a bufio.Writer of
// batchBufSize would. Over a plain TCP socket, body bytes that stay
// unmodified until the flush (a cache's, queued with WriteShared) are not
// copied into the buffer: WriteRef keeps a reference, and Flush writes the
// buffer's runs and those bytes in order with one writev. Copying each
// cached 16 KB body into the buffer was ~10 % of the server's CPU under
// h2load (issue 18).
type batchWriter struct {
	out sendClock
	tcp *net.TCPConn // the socket under out's connection when writing to it is writing out; nil: every byte copied
	// buf starts at batchBufMin bytes and grows to batchBufSize once, the
	// first time a batch fills it, right after its flush: vec may point
	// into it, and is empty then. Bodies written by reference never fill
	// it, nor do the responses of a burst of small ones, so most
	// connections (h2load's to shunt serve) never make the 64 KB: it was
	// more than half of what a new connection allocated (issue 18: GC at
	// the start of an h2load -c 100 run).
	buf []byte
	// mark is where buf's bytes not yet in vec start.
	mark int
	vec  net.Buffers
	wv   net.Buffers // vec as handed to WriteTo, which consumes it (a field: a local would escape)
	ref  int         // bytes referenced in vec, not in buf
	err  error
}

const (
	batchBufSize = 64 << 10
	batchBufMin  = 16 << 10
	// refMin is the smallest body referenced rather than copied: below it,
	// the copy costs less than an iovec.
	refMin = 2 << 10
	// maxIovecs bounds a writev's vector, well under the kernel's IOV_MAX.
	maxIovecs = 64
)

func newBatchWriter() *batchWriter {
	return &batchWriter{buf: make([]byte, 0, batchBufMin)}
}

// Reset discards what is buffered and makes out (with its socket tcp, or
// nil) the destination.
func (b *batchWriter) Reset(out sendClock, tcp *net.TCPConn) {
	clear(b.vec)
	b.out, b.tcp, b.buf, b.mark, b.vec, b.ref, b.err = out, tcp, b.buf[:0], 0, b.vec[:0], 0, nil
}

// Write copies p into the buffer, flushing as it fills.
func (b *batchWriter) Write(p []byte) (int, error) {
	if b.err == nil && len(p) <= cap(b.buf)-len(b.buf) {
		// It fits, as nearly every frame header and small payload does:
		// one append (~20 instructions a call against ~65 for the loop,
		// four calls a response).
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	return b.write(p)
}

// write is Write's general case: p may fill the buffer, or the buffer may
// have failed.
func (b *batchWriter) write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if b.err != nil {
			return n - len(p), b.err
		}
		if len(b.buf) == cap(b.buf) {
			if b.Flush() == nil && cap(b.buf) < batchBufSize {
				b.buf = make([]byte, 0, batchBufSize)
			}
			continue
		}
		k := copy(b.buf[len(b.buf):cap(b.buf)], p)
		b.buf = b.buf[:len(b.buf)+k]
		p = p[k:]
	}
	return n, nil
}

// WriteRef writes p, which the caller leaves unmodified until the next
// Flush, by reference when it can.
func (b *batchWriter) WriteRef(p []byte) (int, error) {
	if b.tcp == nil || len(p) < refMin {
		return b.Write(p)
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(b.buf) > b.mark {
		b.vec = append(b.vec, b.buf[b.mark:])
		b.mark = len(b.buf)
	}
	b.vec = append(b.vec, p)
	b.ref += len(p)
	// As much per system call as the copying buffer would have written.
	if len(b.buf)+b.ref >= batchBufSize || len(b.vec) >= maxIovecs {
		b.Flush()
	}
	return len(p), b.err
}

// Flush writes everything buffered and referenced, in order.
func (b *batchWriter) Flush() error {
	if b.err != nil {
		return b.err
	}
	if len(b.vec) == 0 {
		if len(b.buf) > 0 {
			_, b.err = b.out.Write(b.buf)
		}
	} else {
		if len(b.buf) > b.mark {
			b.vec = append(b.vec, b.buf[b.mark:])
		}
		b.wv = b.vec
		_, b.err = b.out.writeBuffers(b.tcp, &b.wv)
		clear(b.vec) // the referenced bytes are not ours to keep alive
		b.vec, b.wv, b.ref = b.vec[:0], nil, 0
	}
	b.buf, b.mark = b.buf[:0], 0
	return b.err
}

// plainTCP returns the TCP socket under nc when writing to it is writing to
// nc: nc itself, or a sniffing wrapper's socket (its bytes of its own are
// read ones). Over TLS or anything else, nil.
func plainTCP(nc net.Conn) *net.TCPConn {
	if p, ok := nc.(sniffedConn); ok {
		nc = p.NetConn()
	}
	tc, _ := nc.(*net.TCPConn)
	return tc
}
