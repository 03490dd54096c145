package multipath_test

import (
	"fmt"
	"time"

	"github.com/shunt-net/shunt/multipath"
)

// A caller owns one Scheduler per download, feeds it what its HTTP/2
// connections report, and carries out the actions. Here: two paths, size
// unknown, the primary's response reveals 1000 bytes.
func Example() {
	s, err := multipath.New(multipath.Config{Paths: 2, Size: -1})
	if err != nil {
		panic(err)
	}
	t0 := time.Unix(0, 0)
	show := func(acts []multipath.Action) {
		for _, a := range acts {
			// Request: open a stream on a.Path with Range bytes=a.Start-(a.End-1).
			// SetEnd: cap the stream's flow-control credit at a.End-a.Start bytes.
			// Reset: RST_STREAM. Deliver: write the bytes at a.Start. Done: finish.
			fmt.Println(a)
		}
	}
	show(s.OnStart(t0))
	acts, err := s.OnHeaders(t0.Add(30*time.Millisecond), 1, 200, 1000)
	if err != nil {
		panic(err)
	}
	show(acts)
	show(s.OnData(t0.Add(40*time.Millisecond), 1, 400)) // near its half: the primary's end is announced
	show(s.OnData(t0.Add(50*time.Millisecond), 1, 100)) // its half is in: the rest of its response is not wanted
	acts, _ = s.OnHeaders(t0.Add(100*time.Millisecond), 2, 206, 1000)
	show(acts)
	show(s.OnData(t0.Add(110*time.Millisecond), 2, 500))
	// Output:
	// Request{stream 1 path 0 [0,-1)}
	// Request{stream 2 path 1 [500,1000)}
	// Deliver{stream 1 [0,400)}
	// SetEnd{stream 1 end 500 (first byte 0)}
	// Deliver{stream 1 [400,500)}
	// Reset{stream 1}
	// Deliver{stream 2 [500,1000)}
	// Done
}
