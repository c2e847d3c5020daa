//go:build !unix

package server

// lockFile is unsupported here: the server then recovers interrupted runs
// only once their leases expire.
func lockFile(string, bool) (func(), error) { return nil, errNoLock }
