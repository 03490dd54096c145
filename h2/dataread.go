package h2

import (
	"bytes"
	"io"

	"golang.org/x/net/http2"
)

// readDataInPieces reads a client's DATA frame whose header h is buffered
// next and passes its payload to the response body piece by piece as it
// arrives, instead of after the whole frame as the framer does: a 16 KB
// frame can span the server's first congestion window, so its first bytes
// (an HTML document's head, say) would wait a round trip for its last
// ones. It reports false, having read nothing, for a frame already
// buffered whole, a padded one, or one the framer's and onData's checks
// would refuse (the server's first frame must be its SETTINGS): those go
// the framer's way. A transport error mid-frame is
// returned for readError.
func (c *Conn) readDataInPieces(h []byte) (bool, error) {
	if c.hb.active {
		return false, nil
	}
	fh := parseFrameHeader(h)
	n, flags, id := fh.length, fh.flags, fh.id
	if n == 0 || n > c.cfg.MaxReadFrameSize || c.br.Buffered() >= frameHeaderLen+int(n) || flags.Has(http2.FlagDataPadded) {
		return false, nil
	}
	c.mu.Lock()
	st := c.streams.get(id)
	// A body nobody reads any more goes onData's way, which may reset it.
	ok := c.peer.gotFirst && st != nil && !st.recv.closed && c.dataErrLocked(id, st, n, int(n)) == nil
	if ok {
		c.recvWin.Receive(n)
		st.recvWin.Receive(n)
	}
	c.mu.Unlock()
	if !ok {
		return false, nil
	}
	var hdr [frameHeaderLen]byte
	copy(hdr[:], h)
	io.ReadFull(c.rsrc, hdr[:]) // buffered: no error
	var pt *pieceTrace
	if c.cfg.Trace != nil {
		if c.pieces == nil {
			c.pieces = new(pieceTrace)
		}
		pt = c.pieces
		pt.b = append(pt.b[:0], hdr[:]...)
	}
	buf := chunkPool.Get().(*[chunkSize]byte)
	defer chunkPool.Put(buf)
	for left := int(n); left > 0; {
		k, err := c.rsrc.Read(buf[:min(left, len(buf))])
		if k > 0 {
			left -= k
			c.dataIn.Add(int64(k))
			if pt != nil {
				pt.b = append(pt.b, buf[:k]...)
				if left == 0 { // before the reader can see the body's end
					pt.trace(c.cfg.Trace)
				}
			}
			c.mu.Lock()
			c.dataPieceLocked(st, buf[:k], left == 0 && flags.Has(http2.FlagDataEndStream))
			c.mu.Unlock()
		}
		if err != nil && left > 0 {
			return true, err
		}
	}
	return true, nil
}

// pieceTrace makes a DATA frame read in pieces whole again for Trace,
// which takes frames as the framer returns them; kept for the connection.
type pieceTrace struct {
	b  []byte // the frame: header and payload
	r  bytes.Reader
	fr *http2.Framer
}

func (pt *pieceTrace) trace(fn func(Direction, http2.Frame)) {
	pt.r.Reset(pt.b)
	if pt.fr == nil {
		pt.fr = http2.NewFramer(nil, &pt.r)
		pt.fr.SetReuseFrames()
	}
	if f, err := pt.fr.ReadFrame(); err == nil {
		fn(Recv, f)
	}
}

// dataPieceLocked is onData for part of a frame whose windows and length
// were checked whole; end: the frame's last byte, with END_STREAM. A
// stream the application gave up meanwhile has the bytes consumed.
func (c *Conn) dataPieceLocked(st *stream, p []byte, end bool) {
	if st.state == stateClosed {
		c.consumedLocked(nil, len(p))
		return
	}
	c.bodyBytesLocked(st, p)
	if end {
		c.handleErrLocked(c.bodyEndLocked(st))
	}
}
