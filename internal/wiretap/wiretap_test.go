package wiretap

import (
	"context"
	"net"
	"testing"

	"golang.org/x/net/http2"
)

// Only DATA payload counts (not padding, not other frames), summed over
// every connection the wrapped dial opened.
func TestDialCountsData(t *testing.T) {
	var peers []net.Conn
	dial, total := Dial(func(context.Context, string, string) (net.Conn, error) {
		c, s := net.Pipe()
		peers = append(peers, s)
		return c, nil
	})
	for _, sizes := range [][]int{{1000, 500}, {16384}} {
		c, err := dial(context.Background(), "tcp", "x")
		if err != nil {
			t.Fatal(err)
		}
		s := peers[len(peers)-1]
		go func() {
			fr := http2.NewFramer(s, nil)
			fr.WriteSettings()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}, EndHeaders: true})
			for _, n := range sizes {
				fr.WriteDataPadded(1, false, make([]byte, n), make([]byte, 7))
			}
			fr.WritePing(false, [8]byte{})
			s.Close()
		}()
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		c.Close()
	}
	if got := total(); got != 1000+500+16384 {
		t.Fatalf("total %d, want %d", got, 1000+500+16384)
	}
}
