package experiment

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Config is an experiment's typed configuration: its options are declared
// by field tags (see Decode), and Validate checks what the types alone do
// not, with field-named errors (FieldError with params.KEY).
type Config interface {
	Validate() error
}

// Kind is an experiment as the runner sees it: a typed configuration, its
// defaults, and how to start it. Kind implements Driver, so the runner's
// table of drivers is a table of Kinds, and a command builds the same
// configuration from flags (Flags) and calls the same Start.
type Kind[C Config, S Session] struct {
	Name    string
	Default func() C
	// CheckObject validates an object for a configuration (nil: any).
	CheckObject func(C, Object) error
	Start       func(ctx context.Context, env *Env, c C) (S, error)
}

// Config decodes and validates a protocol's params over the defaults.
func (k Kind[C, S]) Config(params map[string]string) (C, error) {
	c := k.Default()
	if err := Decode(k.Name, params, &c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Check implements Driver.
func (k Kind[C, S]) Check(p Protocol, o Object) error {
	c, err := k.Config(p.Params)
	if err != nil || k.CheckObject == nil {
		return err
	}
	return k.CheckObject(c, o)
}

// StartProtocol implements Driver's Start.
func (k Kind[C, S]) startProtocol(ctx context.Context, env *Env, p Protocol) (Session, error) {
	c, err := k.Config(p.Params)
	if err != nil {
		return nil, err
	}
	s, err := k.Start(ctx, env, c)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

// Driver returns k as a Driver for the runner's table.
func (k Kind[C, S]) Driver() Driver { return kindDriver[C, S]{k} }

type kindDriver[C Config, S Session] struct{ k Kind[C, S] }

func (d kindDriver[C, S]) Check(p Protocol, o Object) error { return d.k.Check(p, o) }
func (d kindDriver[C, S]) Start(ctx context.Context, env *Env, p Protocol) (Session, error) {
	return d.k.startProtocol(ctx, env, p)
}

// Protocol describes a configuration made outside a scenario (a command
// line) as the protocol its record carries: the driver's name and the
// options that differ from the defaults, so the record reads like a
// scenario's and Decode turns it back into c.
func (k Kind[C, S]) Protocol(name string, c C) Protocol {
	def := k.Default()
	return Protocol{Name: name, Driver: k.Name, Params: Encode(&c, &def)}
}

// RunOnce runs one measurement in a session and makes its record: the one
// path from a run to a Record, for the runner's sweeps and for commands.
// The run is bounded by timeout; a run that exceeds it is an error. now is
// the clock of the record's start and duration (nil: time.Now).
func RunOnce(ctx context.Context, nw Network, sess Session, run *Run, timeout time.Duration, now func() time.Time) *Record {
	if now == nil {
		now = time.Now
	}
	node, nodeErr := ReadNode()
	rec := &Record{Run: *run, Start: now(), Node: node}
	cpu0, cpuErr := nw.EmulatorCPU()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	res, err := sess.Run(rctx, run)
	if err == nil && rctx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("run exceeded its timeout %v", timeout)
	}
	cancel()
	cpu1, cpuErr1 := nw.EmulatorCPU()
	rec.Duration = now().Sub(rec.Start).Seconds()
	rec.Metrics, rec.Counts, rec.Sock = res.Metrics, res.Counts, res.Sock
	rec.Info = map[string]string{}
	for k, v := range sess.Info() {
		rec.Info[k] = v
	}
	for k, v := range res.Info {
		rec.Info[k] = v
	}
	if cpuErr != nil || cpuErr1 != nil {
		rec.Info["emulator_cpu_error"] = fmt.Sprint(errors.Join(cpuErr, cpuErr1))
	} else {
		rec.EmulatorCPU = (cpu1 - cpu0).Seconds()
	}
	if nodeErr != nil {
		rec.Info["node_error"] = nodeErr.Error()
	}
	rec.Network = nw.Describe()
	if err != nil {
		rec.Error = err.Error()
	}
	return rec
}
