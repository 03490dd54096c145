package experiment

import "runtime/debug"

// commit is the binary's commit when the build sets it
// (-ldflags "-X github.com/shunt-net/shunt/experiment.commit=REV"): go build
// stamps none in a git worktree or with -buildvcs=false, as on the team's
// machine.
var commit string

// Binary is the commit this binary was built from: the one set at link
// time, else the one go build stamped, with "+modified" when the work tree
// had uncommitted changes; "" when neither is known (go test, go run).
func Binary() string {
	if commit != "" {
		return commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return binaryOf(bi.Settings)
}

func binaryOf(settings []debug.BuildSetting) string {
	rev, modified := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" && modified {
		rev += "+modified"
	}
	return rev
}
