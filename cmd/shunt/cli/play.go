package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/experiment/video"
)

var playCmd = &Command{
	Name:  "play",
	Usage: "play DIR|DIR/video.mpd [--mode single|mph2|mph2-fs|mph2-fs-bwl|msplayer|mhttp|mptcp|proxy] [--abr exo|bola] [--player go|dashjs] [--segments N] [--chunk SIZE] [--json FILE] [link options]",
	Short: "play a DASH video made by scripts/dash-content with the Go player or dash.js in Chromium and print bitrate, stalls and switches",
}

func init() {
	playCmd.Run = func(ctx context.Context, args []string) error {
		return runPlay(ctx, args, os.Stdout, os.Stderr)
	}
	Register(playCmd)
}

// playPort is where the video server listens in an emulated network.
const playPort = 8446

// runPlay runs the dash experiment (package video) once: its options are
// the scenario params spelled as flags, the network is the link options'
// one emulated path or this machine's loopback (one path: the multipath
// modes run degenerate; two paths need shunt bench's twopath conditions).
func runPlay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(playCmd)
	fs.SetOutput(stderr)
	cfg := video.DefaultConfig()
	experiment.Flags(fs, &cfg, "content", "path")
	jsonFile := fs.String("json", "", "append the playback's record (the JSON line of shunt bench's runs.jsonl) to `FILE`")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up on the playback after this long")
	seed := fs.Int64("seed", 1, "`SEED` of the emulated link's loss")
	lf := addLinkFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("want one video (DIR or DIR/video.mpd), got %q", pos)
	}
	cfg.Content = pos[0]
	if filepath.Base(cfg.Content) == "video.mpd" {
		cfg.Content = filepath.Dir(cfg.Content)
	}
	nf := &emulated.Factory{Shipped: bench.ShippedFile}
	cond, err := lf.condition(nf)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	env := &experiment.Env{Condition: cond, Objects: []experiment.Object{{Name: "video"}}, Log: stderr}
	if lf.set() {
		if env.Net, err = emulate(ctx, nf, cond, *seed); err != nil {
			return err
		}
		defer env.Net.Close()
		env.Port = playPort
	} else {
		env.Condition.Name, env.Net = "loopback", emulated.Local()
		if env.Port, err = emulated.LocalPort(); err != nil {
			return err
		}
	}
	cfg.Path = env.Net.Paths()[0].Name
	if err := cfg.Validate(); err != nil {
		return flagError(err)
	}
	w, err := openJSON(*jsonFile)
	if err != nil {
		return err
	}
	if w != nil {
		defer w.Close()
	}
	sess, err := video.Start(ctx, env, cfg)
	if err != nil {
		return flagError(err)
	}
	defer sess.Close()
	run := &experiment.Run{Scenario: "shunt play", Condition: env.Condition, Protocol: video.Kind.Protocol(cfg.Mode, cfg), Object: env.Objects[0], Seed: *seed}
	rec, err := runCommand(ctx, env.Net, sess, run, *jsonFile, w, *timeout)
	if err != nil {
		return err
	}
	m := rec.Metrics
	fmt.Fprintf(stdout, "%s (%s, %s) over %s: %.0f kbit/s mean, startup %.3f s, %d stalls %.2f s (%.2f %%), %d switches\n",
		cfg.Content, cfg.Mode, cfg.ABR, env.Condition.Name, m["kbit_per_s"], m["startup"], int(rec.Counts["stalls"]), m["stall"], m["rebuffer_pct"], int(m["switches_count"]))
	fmt.Fprintf(stdout, "segment kbit/s: %s\n", strings.ReplaceAll(rec.Info["segment_kbps"], ",", " "))
	return nil
}
