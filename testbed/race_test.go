//go:build race

package testbed

// raceEnabled: the race detector slows the emulator's packet loop several
// times, so accuracy figures measured under it say nothing about the link.
const raceEnabled = true
