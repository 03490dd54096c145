package download

import (
	"context"
	"fmt"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/smig"
)

func (c Config) warm() bool     { return c.Connect == "warm" }
func (c Config) smigOn() bool   { return c.SMig != "" }
func (c Config) complete() bool { return c.Background == "complete" }
func (c Config) onDemand() bool { return c.SMigPool == "ondemand" }

// policy is the SMig policy (checked by Validate).
func (c Config) policy() smig.Policy {
	p, _ := smig.ParsePolicy(c.SMig)
	return p
}

// serverExtras configures shunt's server: the SMig server of the session
// (its policy if it is a server policy, else NoMig, which still serves a
// client's migration requests) and the socket option.
func (c Config) serverExtras() origin.Extras {
	x := origin.Extras{NotSentLowat: c.NotSentLowat, KernelSendQueue: c.SendQueue == "kernel"}
	if c.smigOn() {
		srv, _ := c.policy().Split()
		x.SMig = &smig.Server{Policy: srv}
	}
	return x
}

// clientPolicy is what the SMig client applies: migcp, else NoMig.
func (c Config) clientPolicy() smig.Policy {
	_, cli := c.policy().Split()
	return cli
}

// awaitIdle waits until the SMig client holds a bound idle connection, so
// runs start in the talk's scenario "an idle connection is available"
// rather than racing the pool's handshake.
func awaitIdle(ctx context.Context, t *smig.Transport) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := t.WaitIdleBound(ctx); err != nil {
		return fmt.Errorf("smig: no pooled idle connection bound within 5 s of the warm-up: %w", err)
	}
	return nil
}

// smigSnapshot is the server's counters before a run; the session's server
// outlives runs, so a run's share is a difference.
type smigSnapshot struct{ migrations, asked, refused, frames, moved, connReqs int64 }

func snapshotSMig(s *smig.Server) smigSnapshot {
	if s == nil {
		return smigSnapshot{}
	}
	st := s.Stats()
	return smigSnapshot{st.Migrations.Load(), st.ClientAsked.Load(), st.Refused.Load(), st.ExtraFrameOut.Load(), st.MovedBytes.Load(), st.ConnRequests.Load()}
}

// smigCounts adds a run's SMig counters to counts: the server's since
// before, and the run's own client's.
func smigCounts(res *experiment.Result, s *smig.Server, before smigSnapshot, t *smig.Transport) {
	if s == nil {
		return
	}
	// smig.Transport picks connections itself and reports none to
	// httptrace, so conn_reused would read false; connections tells instead.
	delete(res.Info, "conn_reused")
	counts := res.Counts
	// The server counts a migration's moved bytes when its copy ends, which
	// may be just after the client read the last byte.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	s.WaitCopies(ctx)
	cancel()
	now := snapshotSMig(s)
	counts["smig_migrations"] = float64(now.migrations - before.migrations)
	counts["smig_client_initiated"] = float64(now.asked - before.asked)
	counts["smig_refused"] = float64(now.refused - before.refused)
	counts["smig_server_frames"] = float64(now.frames - before.frames)
	counts["smig_moved_bytes"] = float64(now.moved - before.moved)
	counts["smig_conn_requests"] = float64(now.connReqs - before.connReqs)
	if t != nil {
		cs := t.Stats()
		counts["smig_client_requests"] = float64(cs.Asked.Load())
		counts["smig_linked"] = float64(cs.Migrated.Load())
		counts["smig_bad_frames"] = float64(cs.BadFrames.Load())
	}
}

func (c Config) smigInfo() map[string]string {
	if !c.smigOn() {
		return nil
	}
	return map[string]string{"client": "shunt smig.Transport (h2)", "smig_policy": c.policy().String(), "smig_client_policy": c.clientPolicy().String(), "smig_pool": c.SMigPool}
}
