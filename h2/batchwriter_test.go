package h2

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBatchWriterOrder writes seeded mixes of copied and referenced runs of
// every size around the buffer's and refMin's bounds, with flushes between,
// to a TCP socket (writev) and to a pipe (copies only): the reader gets
// every byte in the order written.
func TestBatchWriterOrder(t *testing.T) {
	pool := make([]byte, 256<<10)
	rand.New(rand.NewSource(1)).Read(pool)
	sizes := []int{0, 1, 9, refMin - 1, refMin, batchBufMin - 1, batchBufMin, batchBufMin + 1, batchBufSize - 1, batchBufSize, batchBufSize + 1, 100 << 10}
	for _, dest := range []string{"tcp", "pipe"} {
		for seed := int64(0); seed < 20; seed++ {
			var w, r net.Conn
			var tcp *net.TCPConn
			if dest == "tcp" {
				cc, sc := tcpPair(t)
				w, r, tcp = sc, cc, sc.(*net.TCPConn)
			} else {
				w, r = net.Pipe()
			}
			rng := rand.New(rand.NewSource(seed))
			var want bytes.Buffer
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(r)
				got <- b
			}()
			b := newBatchWriter()
			b.Reset(sendClock{nc: w, timeout: 5 * time.Second}, tcp)
			refs := 0
			for op := 0; op < 200; op++ {
				n := sizes[rng.Intn(len(sizes))]
				off := rng.Intn(len(pool) - n + 1)
				p := pool[off : off+n]
				var err error
				switch rng.Intn(5) {
				case 0, 1:
					want.Write(p)
					_, err = b.Write(p)
				case 2, 3:
					want.Write(p)
					_, err = b.WriteRef(p)
					if len(b.vec) > 0 {
						refs++
					}
				case 4:
					err = b.Flush()
				}
				if err != nil {
					t.Fatalf("%s seed %d op %d: %v", dest, seed, op, err)
				}
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if g := <-got; !bytes.Equal(g, want.Bytes()) {
				i := 0
				for i < len(g) && i < want.Len() && g[i] == want.Bytes()[i] {
					i++
				}
				t.Fatalf("%s seed %d: read %d bytes, differing from the %d written at %d", dest, seed, len(g), want.Len(), i)
			}
			if dest == "tcp" && refs == 0 || dest == "pipe" && refs > 0 {
				t.Fatalf("%s seed %d: %d writes by reference", dest, seed, refs)
			}
		}
	}
}

// TestBatchWriterSendTimeout: a writev to a peer that reads nothing ends
// with the send timeout's error, as a copied write does.
func TestBatchWriterSendTimeout(t *testing.T) {
	_, sc := tcpPair(t)
	b := newBatchWriter()
	b.Reset(sendClock{nc: sc, timeout: 100 * time.Millisecond}, sc.(*net.TCPConn))
	p := make([]byte, 1<<20)
	var err error
	for i := 0; i < 1024 && err == nil; i++ { // 1 GB at most: far beyond any socket buffer
		_, err = b.WriteRef(p)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "send timeout") {
		t.Fatalf("err = %v, want the send timeout's", err)
	}
	if _, err2 := b.Write(p[:10]); err2 != err {
		t.Fatalf("a write after the error: %v, want %v", err2, err)
	}
}
