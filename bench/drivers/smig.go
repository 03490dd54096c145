package drivers

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/smig"
)

// SMig and the SMig experiment's other knobs, as parameters of driver http:
//
//	smig           nomig | migsw[:BYTES] | migsp[:BYTES] | migcp[:BYTES]
//	               (h2 against shunt only): both ends announce SMig; a server
//	               policy runs in the server, migcp in the client
//	notsent_lowat  TCP_NOTSENT_LOWAT of shunt's server sockets in bytes
//	               (default 0: the kernel's, as the SMig talk measured)
//	background     cancel | complete (default cancel): complete lets the
//	               background download finish and times it (metric large_time)
//	priority       RFC 9218 Priority header of every request, e.g. "i": by
//	               default shunt's server sends same-urgency responses one
//	               after the other, a head-of-line blocking of its own that
//	               migration is not about; incremental ones share the link
//	smig_pool      idle | ondemand (default idle): idle keeps one bound idle
//	               connection and starts runs once it is ready (the talk's
//	               "idle connection available"); ondemand opens one only when
//	               a migration needs it, inside the timed part ("no idle
//	               connection")
type smigParams struct {
	on       bool
	policy   smig.Policy
	lowat    int
	complete bool
	priority string
	onDemand bool
}

var smigParamKeys = []string{"smig", "notsent_lowat", "background", "priority", "smig_pool"}

func parseSMigParams(p bench.Protocol, hp httpParams) (smigParams, error) {
	var sp smigParams
	if v, ok := p.Params["smig"]; ok {
		pol, err := smig.ParsePolicy(v)
		if err != nil {
			return sp, &bench.FieldError{Field: "params.smig", Value: v, Err: err}
		}
		if hp.proto != "h2" || hp.server != "shunt" {
			return sp, &bench.FieldError{Field: "params.smig", Value: v, Err: errors.New("SMig needs proto h2 and server shunt")}
		}
		sp.on, sp.policy = true, pol
	}
	if v, ok := p.Params["notsent_lowat"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return sp, &bench.FieldError{Field: "params.notsent_lowat", Value: v, Err: errors.New("want a byte count")}
		}
		if hp.server != "shunt" {
			return sp, &bench.FieldError{Field: "params.notsent_lowat", Value: v, Err: errors.New("set per socket by shunt's server only")}
		}
		sp.lowat = n
	}
	sp.priority = p.Params["priority"]
	switch v := p.Params["smig_pool"]; v {
	case "", "idle":
	case "ondemand":
		if !sp.on {
			return sp, &bench.FieldError{Field: "params.smig_pool", Value: v, Err: errors.New("needs params.smig")}
		}
		sp.onDemand = true
	default:
		return sp, &bench.FieldError{Field: "params.smig_pool", Value: v, Err: errors.New("want idle or ondemand")}
	}
	switch v := p.Params["background"]; v {
	case "", "cancel":
	case "complete":
		sp.complete = true
	default:
		return sp, &bench.FieldError{Field: "params.background", Value: v, Err: errors.New("want cancel or complete")}
	}
	return sp, nil
}

// serverExtras configures shunt's server: the SMig server of the session
// (its policy if it is a server policy, else NoMig, which still serves a
// client's migration requests) and the socket option.
func (sp smigParams) serverExtras() shuntExtras {
	x := shuntExtras{notSentLowat: sp.lowat}
	if sp.on {
		srv, _ := sp.policy.Split()
		x.smig = &smig.Server{Policy: srv}
	}
	return x
}

// clientPolicy is what the SMig client applies: migcp, else NoMig.
func (sp smigParams) clientPolicy() smig.Policy {
	_, cli := sp.policy.Split()
	return cli
}

// awaitIdle waits until the SMig client holds a bound idle connection, so
// runs start in the talk's scenario "an idle connection is available"
// rather than racing the pool's handshake.
func awaitIdle(ctx context.Context, t *smig.Transport) error {
	deadline := time.Now().Add(5 * time.Second)
	for t.IdleBound() == 0 {
		if time.Now().After(deadline) {
			return errors.New("smig: no pooled idle connection bound within 5 s of the warm-up")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
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
func smigCounts(res *bench.Result, s *smig.Server, before smigSnapshot, t *smig.Transport) {
	if s == nil {
		return
	}
	// smig.Transport picks connections itself and reports none to
	// httptrace, so conn_reused would read false; connections tells instead.
	delete(res.Info, "conn_reused")
	counts := res.Counts
	// The server counts a migration's moved bytes when its copy ends, which
	// may be just after the client read the last byte.
	if t != nil && t.Stats().Migrated.Load() > 0 {
		deadline := time.Now().Add(time.Second)
		for snapshotSMig(s).moved == before.moved && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
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

func (sp smigParams) info() map[string]string {
	if !sp.on {
		return nil
	}
	pool := "idle"
	if sp.onDemand {
		pool = "ondemand"
	}
	return map[string]string{"client": "shunt smig.Transport (h2)", "smig_policy": sp.policy.String(), "smig_client_policy": sp.clientPolicy().String(), "smig_pool": pool}
}
