package soak

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/smig"
)

func TestValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.SMig = "migsw:1048576"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Duration = 0 },
		func(c *Config) { c.Idle = -1 },
		func(c *Config) { c.Idle = maxIdle + 1 },
		func(c *Config) { c.Workers = 0 },
		func(c *Config) { c.SMig = "fast" },
	} {
		c := DefaultConfig()
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}

// flat is a passing run: RSS up and down under load, back at the end.
func flat() Summary {
	mb := int64(1 << 20)
	m := Summary{Rounds: 10, Requests: 1000, Idle: 100, IdleAlive: 100,
		Start: Sample{RSS: 20 * mb, Goroutines: 108, FDs: 115}, End: Sample{At: 30 * time.Second, RSS: 60 * mb, Goroutines: 110, FDs: 116}}
	for i := range 15 {
		m.Samples = append(m.Samples, Sample{At: time.Duration(2*i) * time.Second, RSS: int64(80+10*(i%3)) * mb, Goroutines: 500 + i, FDs: 200})
	}
	m.Samples[0] = m.Start
	m.Samples = append(m.Samples, m.End)
	return m
}

// Check passes a flat run and names each way a run fails.
func TestCheck(t *testing.T) {
	if errs := flat().Check(); len(errs) != 0 {
		t.Fatalf("a flat run: %v", errs)
	}
	// A loaded machine's soak: the heap ramps up through the first third,
	// then stays (h61's run, 28 Nov: first third's peak 46 MiB, last 150).
	ramp := flat()
	for i := range ramp.Samples {
		ramp.Samples[i].RSS = 150 << 20
		if i < len(ramp.Samples)/3 {
			ramp.Samples[i].RSS = int64(22+6*i) << 20 // 22 .. 46 MiB
		}
	}
	if errs := ramp.Check(); len(errs) != 0 {
		t.Fatalf("a slow ramp to a steady RSS: %v", errs)
	}
	for _, c := range []struct {
		name string
		mod  func(*Summary)
		want string
	}{
		{"failed request", func(m *Summary) { m.Failed = 1 }, "1 h2load requests failed"},
		{"failed SMig download", func(m *Summary) { m.SMigFailed = 2 }, "2 SMig downloads failed"},
		{"idle lost", func(m *Summary) { m.IdleAlive = 99 }, "1 of 100 idle connections were lost"},
		{"goroutine leak", func(m *Summary) { m.End.Goroutines = 129 }, "goroutines: 108 at the start, 129"},
		{"fd leak", func(m *Summary) { m.End.FDs = 126 }, "open files: 115 at the start, 126"},
		{"RSS grows", func(m *Summary) {
			for i := len(m.Samples) - len(m.Samples)/3; i < len(m.Samples); i++ {
				m.Samples[i].RSS = 160 << 20 // over 1.25 x 100 + 32 = 157 MiB
			}
		}, "RSS grows: peak 100.0 MiB in the first third, 100.0 in the middle, 160.0 in the last"},
		{"RSS grows all along", func(m *Summary) {
			for i := range m.Samples {
				m.Samples[i].RSS = int64(40+12*i) << 20 // 40 .. 220 MiB
			}
		}, "RSS grows: peak 88.0 MiB in the first third, 160.0 in the middle, 220.0 in the last"},
	} {
		m := flat()
		c.mod(&m)
		errs := m.Check()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%s: %v, want one error saying %q", c.name, errs, c.want)
		}
	}
}

func TestCounts(t *testing.T) {
	c := flat().Counts()
	for k, want := range map[string]float64{
		"requests": 1000, "rss_mib_start": 20, "rss_mib_end": 60, "rss_mib_max": 100,
		"goroutines_start": 108, "goroutines_end": 110, "goroutines_max": 514, "fds_max": 200, "idle_alive": 100, "samples": 16,
	} {
		if c[k] != want {
			t.Errorf("%s = %v, want %v", k, c[k], want)
		}
	}
}

// lateCtx is a context past its deadline whose timer has not run yet: Err
// stays nil until the inner context is cancelled. Under load the runtime
// leaves a context.WithTimeout like this for milliseconds after its
// deadline (measured here: median 1.6 ms, up to 32 ms).
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// The SMig client stops at its context's deadline, not only once the
// context is cancelled: in between, every dial fails at once with "dial
// tcp ...: i/o timeout", and counting those as failed downloads failed
// the CI soak (72 of 1,792 SMig downloads in its last moments).
func TestSMigClientStopsAtDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(200*time.Millisecond, cancel) // the late timer
	s := &Session{client: emulated.Local().Client()}
	done, failed, _, errs := s.smigClient(lateCtx{inner}, "http://"+l.Addr().String()+"/gen/4MB")
	if done != 0 || failed != 0 || len(errs) != 0 {
		t.Errorf("after the deadline: %d downloads done, %d failed (%d errors, first %v); want none begun", done, failed, len(errs), errs[:min(len(errs), 1)])
	}
}

// The migration check counts every client's migrations: a soak that ends
// in the first download of a new client (here the server ends it on the
// 6th request) has a last client with none, which failed 2 of 15 loaded
// soaks when only the last client's counted.
func TestSMigClientCountsEveryClient(t *testing.T) {
	pol, err := smig.ParsePolicy("migsw:1048576")
	if err != nil {
		t.Fatal(err)
	}
	cont, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var requests atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 6 {
			cancel() // the soak ends: the second client's first download
			<-r.Context().Done()
			return
		}
		cont.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sm := &smig.Server{Policy: pol}
	srv := &server.Server{Handler: h, H2: &h2.Server{Handler: sm.Wrap(h), Config: sm.Config(h2.Config{})}}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()

	s := &Session{client: emulated.Local().Client(), moves: true}
	done, failed, migrated, errs := s.smigClient(ctx, "http://"+ln.Addr().String()+"/gen/4MB")
	if done != 5 || failed != 0 || migrated == 0 || len(errs) != 0 {
		t.Errorf("%d downloads done, %d failed, %d migrated, errors %v; want 5 done, 0 failed, some migrated, no error", done, failed, migrated, errs)
	}
	t.Logf("%d of %d downloads migrated", migrated, done)
}
