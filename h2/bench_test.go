package h2

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// BenchmarkGet measures this package's client against its server over
// loopback h2c: one connection, requests in parallel (GOMAXPROCS x 10).
func BenchmarkGet(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			ts := startServer(b, genHandler(), Config{}, false)
			tr := &Transport{AllowHTTP: true}
			defer tr.CloseIdleConnections()
			url := ts.url(fmt.Sprintf("/gen/%d", size))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.SetParallelism(10)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 32<<10)
				for pb.Next() {
					req, _ := http.NewRequest("GET", url, nil)
					res, err := tr.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					n, err := io.CopyBuffer(io.Discard, res.Body, buf)
					res.Body.Close()
					if err != nil || n != int64(size) {
						b.Errorf("read %d bytes, %v", n, err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkInlineBurst is h2load's load on one connection, without h2load:
// bursts of 10 GETs of a file content.Handler has cached (answered inline),
// as HEADERS referring to HPACK's dynamic table (:path a literal, as
// h2load's), each burst sent in one write and its 10 responses read in
// full, every body byte checked. The client allocates nothing per request,
// so allocs/op and B/op are the server's per request: figures that do not
// depend on the machine's load, unlike ns/op. The tls- cases run it over
// TLS; keep-reader- with parking off (what parking costs a busy reader).
func BenchmarkInlineBurst(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
		tls  bool
		cfg  Config
	}{{"1024", 1 << 10, false, Config{}}, {"16384", 16 << 10, false, Config{}}, {"tls-1024", 1 << 10, true, Config{}},
		{"tls-16384", 16 << 10, true, Config{}}, {"keep-reader-1024", 1 << 10, false, Config{KeepIdleReader: true}}} {
		b.Run(c.name, func(b *testing.B) {
			ts, body := fileServerConfig(b, c.size, c.cfg, c.tls)
			bc := newBurstClient(b, ts.addr, "/obj", body, c.tls)
			bc.burst(1) // loads the cache; then every request is answered inline
			b.ReportAllocs()
			r0, w0 := syscallsIO(b)
			s0 := sleeps(b)
			b.ResetTimer()
			for n := b.N; n > 0; n -= burstSize {
				bc.burst(min(n, burstSize))
			}
			b.StopTimer()
			r1, w1 := syscallsIO(b)
			// Threads' sleeps (voluntary context switches): a goroutine woken
			// on an idle P costs a futex wake-up and one of these.
			b.ReportMetric(float64(sleeps(b)-s0)/float64(b.N), "sleeps/op")
			// The client's: one write per burst, and reads.
			b.ReportMetric(float64(r1-r0)/float64(b.N), "reads/op")
			b.ReportMetric(float64(w1-w0)/float64(b.N), "writes/op")
		})
	}
}

const burstSize = 10

// fileServerConfig serves /obj, a file of size bytes, with content.Handler.
func fileServerConfig(b *testing.B, size int, cfg Config, useTLS bool) (*testServer, []byte) {
	dir := b.TempDir()
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i*13 + i>>8)
	}
	p := filepath.Join(dir, "obj")
	old := time.Now().Add(-time.Hour)
	if err := os.WriteFile(p, body, 0o644); err != nil || os.Chtimes(p, old, old) != nil {
		b.Fatal("writing the file:", err)
	}
	h, err := content.NewHandler(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return startServer(b, h, cfg, useTLS), body
}

// BenchmarkOpenBurst is the start of an h2load -c 100 run: 100 new
// connections at once, each sending a burst of 10 GETs of a cached 1 KB
// file, read in full, then closed. B/op over 100 is what the server (and
// the raw clients, little) allocates per new connection, which decides how
// many garbage collections the start of a run brings.
func BenchmarkOpenBurst(b *testing.B) {
	const conns = 100
	ts, body := fileServerConfig(b, 1<<10, Config{}, false)
	newBurstClient(b, ts.addr, "/obj", body, false).burst(1) // loads the cache
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range conns {
			bc := newBurstClient(b, ts.addr, "/obj", body, false)
			wg.Go(func() {
				bc.burst(burstSize)
				bc.nc.Close()
			})
		}
		wg.Wait()
	}
}

// BenchmarkManyConns is h2load -c 100 -m 10's load without h2load: 100
// connections kept open and driven by one goroutine, as h2load's one
// thread drives them, a burst of 10 GETs of a cached file written to each
// in turn, then every burst's responses read. A connection's next burst
// comes only after the other 99 have been served, some milliseconds
// later, so what the server does when a connection turns quiet (its
// writer, its queues and stream table, parking) shows here, per request,
// in B/op and allocs/op. keep-reader runs it with parking off.
func BenchmarkManyConns(b *testing.B) {
	const conns = 100
	for _, c := range []struct {
		name string
		size int
		cfg  Config
	}{{"1024", 1 << 10, Config{}}, {"16384", 16 << 10, Config{}}, {"keep-reader-1024", 1 << 10, Config{KeepIdleReader: true}}} {
		b.Run(c.name, func(b *testing.B) {
			ts, body := fileServerConfig(b, c.size, c.cfg, false)
			bcs := make([]*burstClient, conns)
			for i := range bcs {
				bcs[i] = newBurstClient(b, ts.addr, "/obj", body, false)
				bcs[i].burst(1) // the cache, then the connection's first streams
			}
			b.ReportAllocs()
			s0 := sleeps(b)
			b.ResetTimer()
			for n := b.N; n > 0; n -= conns * burstSize {
				k := min(n, conns*burstSize)
				for i := 0; i*burstSize < k; i++ {
					bcs[i].send(min(burstSize, k-i*burstSize))
				}
				for i := 0; i*burstSize < k; i++ {
					bcs[i].recv(min(burstSize, k-i*burstSize))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(sleeps(b)-s0)/float64(b.N), "sleeps/op")
		})
	}
}

// sleeps returns the process's voluntary context switches so far.
func sleeps(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Skip("getrusage:", err)
	}
	return ru.Nvcsw
}

// syscallsIO returns the process's read and write system calls so far
// (/proc/self/io's syscr and syscw).
func syscallsIO(b *testing.B) (reads, writes int64) {
	p, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io:", err)
	}
	for _, line := range strings.Split(string(p), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			reads, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			writes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return reads, writes
}

// burstClient is BenchmarkInlineBurst's client: raw frames over TCP.
type burstClient struct {
	b        *testing.B
	nc       net.Conn
	br       *bufio.Reader
	enc      *hpack.Encoder
	hbuf     bytes.Buffer
	out      []byte
	path     string
	body     []byte
	next     uint32          // next stream ID
	got      [burstSize]int  // body bytes checked per stream of the burst
	hdr      [9]byte         // a frame header read
	payload  []byte          // a frame's payload read
	headered [burstSize]bool // HEADERS seen
}

func newBurstClient(b *testing.B, addr, path string, body []byte, useTLS bool) *burstClient {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	if useTLS {
		tc := tls.Client(nc, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err := tc.Handshake(); err != nil {
			b.Fatal(err)
		}
		nc = tc
	}
	b.Cleanup(func() { nc.Close() })
	bc := &burstClient{b: b, nc: nc, br: bufio.NewReaderSize(nc, 64<<10), path: path, body: body, next: 1, payload: make([]byte, 1<<14)}
	bc.enc = hpack.NewEncoder(&bc.hbuf)
	// Preface, SETTINGS with a stream window as large as any body, and
	// the connection window opened by as much.
	bc.out = append(bc.out, http2.ClientPreface...)
	bc.out = appendFrameHeader(bc.out, 6, http2.FrameSettings, 0, 0)
	bc.out = append(bc.out, 0, byte(http2.SettingInitialWindowSize), 0x40, 0, 0, 0)
	bc.out = bc.windowUpdate(bc.out, 1<<30)
	if _, err := nc.Write(bc.out); err != nil {
		b.Fatal(err)
	}
	return bc
}

func appendFrameHeader(p []byte, n int, t http2.FrameType, f http2.Flags, id uint32) []byte {
	return append(p, byte(n>>16), byte(n>>8), byte(n), byte(t), byte(f), byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func (bc *burstClient) windowUpdate(p []byte, inc uint32) []byte {
	p = appendFrameHeader(p, 4, http2.FrameWindowUpdate, 0, 0)
	return append(p, byte(inc>>24), byte(inc>>16), byte(inc>>8), byte(inc))
}

// burst sends n requests in one write and reads their responses whole.
func (bc *burstClient) burst(n int) {
	bc.send(n)
	bc.recv(n)
}

// send writes n requests in one write.
func (bc *burstClient) send(n int) {
	bc.out = bc.out[:0]
	for i := 0; i < n; i++ {
		bc.hbuf.Reset()
		// :path as nghttp2 (h2load) sends it: a literal never added to the
		// dynamic table (Sensitive: never indexed; nghttp2's "without
		// indexing" decodes alike).
		for _, f := range [...]hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: "localhost"}, {Name: ":path", Value: bc.path, Sensitive: true}, {Name: "user-agent", Value: "burst"}} {
			bc.enc.WriteField(f)
		}
		bc.out = appendFrameHeader(bc.out, bc.hbuf.Len(), http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, bc.next)
		bc.out = append(bc.out, bc.hbuf.Bytes()...)
		bc.next += 2
		bc.got[i], bc.headered[i] = 0, false
	}
	bc.out = bc.windowUpdate(bc.out, uint32(n*len(bc.body))) // what this burst's bodies take
	if _, err := bc.nc.Write(bc.out); err != nil {
		bc.b.Fatal(err)
	}
}

// recv reads the responses to the n requests send wrote, whole.
func (bc *burstClient) recv(n int) {
	first := bc.next - uint32(2*n)
	for done := 0; done < n; {
		if _, err := io.ReadFull(bc.br, bc.hdr[:]); err != nil {
			bc.b.Fatal(err)
		}
		h := bc.hdr
		size := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		t, flags, id := http2.FrameType(h[3]), http2.Flags(h[4]), uint32(h[5]&0x7f)<<24|uint32(h[6])<<16|uint32(h[7])<<8|uint32(h[8])
		if size > len(bc.payload) {
			bc.b.Fatalf("frame of %d bytes", size)
		}
		p := bc.payload[:size]
		if _, err := io.ReadFull(bc.br, p); err != nil {
			bc.b.Fatal(err)
		}
		if id == 0 {
			if t == http2.FrameGoAway {
				bc.b.Fatalf("GOAWAY %x", p)
			}
			continue
		}
		i := int(id-first) / 2
		if id < first || i >= n {
			bc.b.Fatalf("frame %v on stream %d, not of this burst", t, id)
		}
		switch t {
		case http2.FrameHeaders:
			bc.headered[i] = true
		case http2.FrameData:
			if !bc.headered[i] || !bytes.Equal(p, bc.body[bc.got[i]:min(bc.got[i]+size, len(bc.body))]) {
				bc.b.Fatalf("stream %d: DATA at %d differs from the file (or came before HEADERS)", id, bc.got[i])
			}
			bc.got[i] += size
		default:
			bc.b.Fatalf("frame %v on stream %d", t, id)
		}
		if flags.Has(http2.FlagDataEndStream) {
			if bc.got[i] != len(bc.body) {
				bc.b.Fatalf("stream %d ended after %d of %d bytes", id, bc.got[i], len(bc.body))
			}
			done++
		}
	}
}
