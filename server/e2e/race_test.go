//go:build race

package e2e

// raceEnabled builds the server under test with the race detector too, so
// the concurrency of the server process is checked, not only the client's.
const raceEnabled = true
