// Package drivers is the table of the experiments `shunt bench` runs, by
// the driver names scenarios give them (protocols[].driver). Each entry is
// an experiment package; adding an experiment is one package and one line
// here.
package drivers

import (
	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment/bulk"
	"github.com/shunt-net/shunt/experiment/download"
	"github.com/shunt-net/shunt/experiment/h2load"
	"github.com/shunt-net/shunt/experiment/idleconn"
	"github.com/shunt-net/shunt/experiment/mpdownload"
	"github.com/shunt-net/shunt/experiment/mptools"
	"github.com/shunt-net/shunt/experiment/pageload"
	"github.com/shunt-net/shunt/experiment/soak"
	"github.com/shunt-net/shunt/experiment/viaproxy"
	"github.com/shunt-net/shunt/experiment/video"
)

// Table maps driver names to experiments.
var Table = bench.Drivers{
	"http":     download.Kind.Driver(),
	"tcp":      bulk.Kind.Driver(),
	"mph2":     mpdownload.Kind.Driver(),
	"mptools":  mptools.Kind.Driver(),
	"replay":   pageload.Replay.Driver(),
	"chromium": pageload.Chromium.Driver(),
	"h2load":   h2load.Kind.Driver(),
	"idle":     idleconn.Kind.Driver(),
	"soak":     soak.Kind.Driver(),
	"dash":     video.Kind.Driver(),
	"proxy":    viaproxy.Kind.Driver(),
}
