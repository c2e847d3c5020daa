package callbacks

import (
	"net/netip"
	"strings"
)

// The addresses a callback is refused, unless its host is allow-listed: an
// SSRF through a callback would reach what only the server can reach. The
// server's own loopback (its API, a local database, an admin port), the
// link-local range the cloud instance-metadata services answer on, and the
// few metadata addresses outside it.
var (
	linkLocal4 = netip.MustParsePrefix("169.254.0.0/16")
	linkLocal6 = netip.MustParsePrefix("fe80::/10")
	// metadataAddrs answer instance metadata outside the link-local range:
	// AWS over IPv6, Alibaba Cloud, Oracle's and Azure's host endpoints.
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
		netip.MustParseAddr("192.0.0.192"),
		netip.MustParseAddr("168.63.129.16"),
	}
	// metadataNames resolve to metadata services; refused by name so no
	// resolver has to be trusted at submit.
	metadataNames = []string{"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)

// refusedHost says why a URL's host (a name or an address literal) is
// refused, or "" when it is not. A name is checked again, resolved, at
// delivery (refusedAddr).
func refusedHost(host string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		return refusedAddr(a)
	}
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return "a loopback name"
	}
	for _, n := range metadataNames {
		if host == n {
			return "a cloud metadata service"
		}
	}
	return ""
}

// refusedAddr says why a callback may not connect to a, or "".
func refusedAddr(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "the unspecified address (this host)"
	case linkLocal4.Contains(a) || linkLocal6.Contains(a) || a.IsLinkLocalMulticast():
		return "a link-local address (where cloud metadata services answer)"
	case a.IsMulticast():
		return "a multicast address"
	}
	for _, m := range metadataAddrs {
		if a == m {
			return "a cloud metadata service"
		}
	}
	return ""
}
