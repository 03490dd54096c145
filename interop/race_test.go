//go:build race

package interop

// raceEnabled builds the shunt binary under test with -race when the tests
// themselves run with it.
const raceEnabled = true
