package h2

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSendMark(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		cwnd         int
		srtt, minRTT time.Duration
		want         int
	}{
		{100 * 1448, 0, 0, maxSendMark},                      // no RTT yet: no limit
		{10 * 1448, 50 * ms, 50 * ms, minSendMark},           // 290 KB/s, no queue: 2 x 13 ms is 7.5 KB, under the least floor
		{100 * 1448, 100 * ms, 100 * ms, 37648},              // 1.45 MB/s, no queue: 2 x 13 ms of it
		{100 * 1448, 100 * ms, 95 * ms, 23168},               // a 5 ms queue: 2 x 8 ms
		{100 * 1448, 100 * ms, 50 * ms, minSendMark},         // the holb link with a 50 ms queue: the least floor
		{1000 * 1448, 50 * ms, 50 * ms, 752_960},             // 29 MB/s, no queue: 2 x 13 ms
		{1000 * 1448, 50 * ms, 30 * ms, 57920},               // 29 MB/s behind a 20 ms queue: 2 ms of it
		{100 * 65483, 50 * time.Microsecond, 0, maxSendMark}, // loopback
	} {
		if got := sendMark(c.cwnd, c.srtt, c.minRTT); got != c.want {
			t.Errorf("sendMark(%d, %v, %v) = %d, want %d", c.cwnd, c.srtt, c.minRTT, got, c.want)
		}
	}
	for _, c := range []struct{ mark, room, want int }{
		{minSendMark, 0, minSendMark / 2},                 // window full: half a mark
		{minSendMark, 10 * 1448, minSendMark/2 + 10*1448}, // plus what goes out at once
		{minSendMark, 1 << 20, writeBatchBudget},          // at most a batch
	} {
		if got := pacedBudget(c.mark, c.room); got != c.want {
			t.Errorf("pacedBudget(%d, %d) = %d, want %d", c.mark, c.room, got, c.want)
		}
	}
	for _, c := range []struct{ srtt, want time.Duration }{
		{0, minSendRefresh}, {time.Millisecond, minSendRefresh}, {20 * time.Millisecond, 80 * time.Millisecond}, {time.Second, maxSendRefresh},
	} {
		if got := sendRefresh(c.srtt); got != c.want {
			t.Errorf("sendRefresh(%v) = %v, want %v", c.srtt, got, c.want)
		}
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestSendQueueWaitsForDrain fills a socket whose peer does not read, then
// checks that waitWritable blocks until the peer reads and is woken by the
// kernel then (the wakeup the writer depends on).
func TestSendQueueWaitsForDrain(t *testing.T) {
	client, server := tcpPair(t)
	q := newSendQueue(server, nil)
	if q == nil {
		t.Fatal("no send queue on a TCP connection")
	}
	q.rc.Control(func(fd uintptr) { q.setMark(fd, minSendMark) })
	if q.mark != minSendMark {
		t.Fatalf("mark %d after setting %d", q.mark, minSendMark)
	}
	// A socket with TCP_NOTSENT_LOWAT set is left to its application.
	if newSendQueue(server, nil) != nil {
		t.Error("a second send queue on a socket whose TCP_NOTSENT_LOWAT is set")
	}
	buf := make([]byte, 64<<10)
	server.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	var sent int64
	for {
		n, err := server.Write(buf)
		sent += int64(n)
		if err != nil {
			break
		}
	}
	server.SetWriteDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { done <- q.waitWritable() }()
	select {
	case err := <-done:
		t.Fatalf("waitWritable returned (%v) while the peer reads nothing", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := io.CopyN(io.Discard, client, sent); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitWritable still blocked after the peer read everything")
	}
}

// TestPacedWriterDelivers runs the engine's paced write path (forced by a
// 32 KB mark on loopback) with responses of several sizes at once over h2c
// and TLS, each checked by SHA-256, and checks the socket's mark.
func TestPacedWriterDelivers(t *testing.T) {
	const mark = 32 << 10
	cfg := Config{sendMark: func(int, time.Duration, time.Duration) int { return mark }}
	for _, useTLS := range []bool{false, true} {
		var marks sync.Map
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			testHandler().ServeHTTP(w, r)
			// Once a large body is in the send queue the writer has
			// collected DATA, so it has set the mark.
			c := r.Context().Value(ConnContextKey).(*Conn)
			var lowat int
			rcOf(t, c.NetConn()).Control(func(fd uintptr) { lowat, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT) })
			marks.Store(r.URL.Path, lowat)
		})
		ts := startServer(t, h, cfg, useTLS)
		tr := newTestTransport(ts)
		sizes := []int64{3 << 20, 10 << 10, 100 << 10, 1, 3<<20 + 7}
		var wg sync.WaitGroup
		for _, n := range sizes {
			wg.Go(func() {
				req, _ := http.NewRequest("GET", ts.url("/gen/"+itoa64(n)), nil)
				req.Header.Set("Priority", "i")
				res, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer res.Body.Close()
				h := sha256.New()
				got, err := io.Copy(h, res.Body)
				if err != nil || got != n {
					t.Errorf("/gen/%d: %d bytes, %v", n, got, err)
					return
				}
				want := sha256.New()
				writeGen(want, n)
				if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
					t.Errorf("/gen/%d: SHA-256 differs", n)
				}
			})
		}
		wg.Wait()
		tr.CloseIdleConnections()
		if m, _ := marks.Load("/gen/" + itoa64(3<<20)); m != mark {
			t.Errorf("TLS %v: TCP_NOTSENT_LOWAT %v after a 3 MB body, want %d", useTLS, m, mark)
		}
	}
}

func rcOf(t *testing.T, nc net.Conn) interface {
	Control(func(fd uintptr)) error
} {
	for {
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = u.NetConn()
	}
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
