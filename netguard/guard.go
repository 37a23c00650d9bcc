// Package netguard is the SSRF guard of every outbound call to a URL an
// agent registered: which targets are well formed, and which addresses no
// receiver may have (the service's own network, cloud metadata, every
// special-purpose block). It is used twice, at registration (package
// endpoints, CheckURL) and on every connection a delivery dials (package
// callbacks, DialControl), so it sits below both.
//
// It imports the standard library only; anything may import it.
package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
)

// MaxURLLen bounds a target URL. Real webhook URLs are far shorter; the cap
// keeps a registration from storing, and every delivery from sending, a
// megabyte of URL.
const MaxURLLen = 2048

// ErrAddressNotAllowed is matched (errors.Is) by every refusal of an address,
// from CheckURL or from DialControl, whatever the field or the class.
var ErrAddressNotAllowed = errors.New("target address not allowed")

// TargetError is a refusal of a target URL. Field is the name of the field
// holding it, so the HTTP layer can answer 400 naming it ("url" here; the
// caller prefixes its path). Reason is safe to show the user: it never quotes
// the URL, which may carry a token in its path or query, nor a resolved
// address.
type TargetError struct {
	Field  string
	Reason string
	// address is set when the refusal is about where the URL leads rather
	// than how it is written.
	address bool
}

func (e *TargetError) Error() string { return e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrAddressNotAllowed) hold for an address refusal.
func (e *TargetError) Is(target error) bool {
	return target == ErrAddressNotAllowed && e.address
}

func badURL(reason string) error {
	return &TargetError{Field: "url", Reason: reason}
}

// addressNotAllowed names the setting that lifts the refusal: a developer
// whose receiver runs on this machine meets it first.
func addressNotAllowed(reason string) error {
	return &TargetError{Field: "url", Reason: reason + allowPrivateHint, address: true}
}

const allowPrivateHint = " (a development server reaches such addresses with TASKHOOK_ALLOW_PRIVATE_TARGETS=true)"

// Resolver looks up the addresses of a host name. *net.Resolver is one;
// tests inject their own.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Guard keeps outbound calls away from the service's own network and from
// addresses no receiver should have: every block of IANA's special-purpose
// address registries (loopback, private, link-local, shared (CGNAT),
// unique-local, documentation, benchmarking, protocol assignments, reserved
// and the rest), multicast, IPv6 outside global unicast, the cloud metadata
// endpoints, IPv4-mapped, IPv4-compatible and 6to4 addresses, and NAT64
// addresses that carry a refused IPv4 address.
//
// It checks twice: CheckURL when an endpoint is registered, resolving its
// host, and DialControl on every connection, on the address actually dialled.
// The second check is the one that counts: a name may resolve to a public
// address at registration and to a private one at delivery time.
//
// The zero Guard refuses those addresses and resolves with
// net.DefaultResolver.
type Guard struct {
	// AllowPrivate lets every address through (TASKHOOK_ALLOW_PRIVATE_TARGETS,
	// for tests and closed networks). The URL must still be well formed.
	AllowPrivate bool
	// Resolver resolves host names for CheckURL; nil means
	// net.DefaultResolver.
	Resolver Resolver
}

// CheckURL refuses a target URL that is not an absolute http or https URL
// with a host, that carries user info, or whose port is out of range; and,
// unless AllowPrivate, one whose host is, or resolves to any, address that is
// not allowed. It returns nil or a *TargetError.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := ParseTarget(raw)
	if err != nil {
		return err
	}
	if g.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if class, bad := disallowed(addr); bad {
			return addressNotAllowed("address not allowed: " + class)
		}
		return nil
	}
	addrs, err := g.resolver().LookupIPAddr(ctx, host)
	if err != nil || len(addrs) == 0 {
		return badURL("host could not be resolved")
	}
	for _, a := range addrs {
		addr, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			return badURL("host could not be resolved")
		}
		// net.IP holds an IPv4 address in 16 bytes as often as in 4, and
		// the dialer connects to it as IPv4: judge it as that.
		addr = addr.Unmap()
		if class, bad := disallowed(addr); bad {
			return addressNotAllowed("host resolves to an address not allowed: " + class)
		}
	}
	return nil
}

// DialControl is a net.Dialer Control function: it refuses, unless
// AllowPrivate, to connect to an address that is not allowed. address is
// what the dialer is about to connect to, an IP and a port, so a name that
// resolves differently now than it did at registration is caught here.
func (g Guard) DialControl(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return addressNotAllowed("target address is not an IP address and port")
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		// The dialer always hands over a resolved address; anything else
		// fails closed.
		return addressNotAllowed("target address is not an IP address and port")
	}
	if class, bad := disallowed(addr); bad {
		return addressNotAllowed("address not allowed: " + class)
	}
	return nil
}

func (g Guard) resolver() Resolver {
	if g.Resolver == nil {
		return net.DefaultResolver
	}
	return g.Resolver
}

// ParseTarget parses raw and checks how it is written, not where it leads:
// CheckURL's first half, which a sender repeats before every delivery. It
// returns the URL or a *TargetError.
func ParseTarget(raw string) (*url.URL, error) {
	switch {
	case raw == "":
		return nil, badURL("is required")
	case len(raw) > MaxURLLen:
		return nil, badURL("is longer than " + strconv.Itoa(MaxURLLen) + " bytes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the URL; say only that it did not parse.
		return nil, badURL("is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, badURL("scheme must be http or https")
	case u.Opaque != "" || u.Host == "":
		return nil, badURL("must be an absolute URL with a host")
	case u.User != nil:
		return nil, badURL("must not carry a user name or password")
	case u.Hostname() == "":
		return nil, badURL("must be an absolute URL with a host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, badURL("port must be between 1 and 65535")
		}
	}
	return u, nil
}

// Address ranges a target may not reach: the blocks of IANA's IPv4 and IPv6
// Special-Purpose Address Registries (RFC 6890 and the RFCs that updated
// them), whole, globally reachable or not, since none is where a webhook
// receiver lives; multicast; and, for IPv6, everything outside 2000::/3, the
// only space IANA hands out as global unicast. A more specific block comes
// before the block that holds it, so the reason names it.
var (
	v4Metadata = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack and most others
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	}
	v6Metadata = []netip.Addr{
		netip.MustParseAddr("fd00:ec2::254"), // AWS over IPv6
	}

	v4Ranges = []classRange{
		{netip.MustParsePrefix("0.0.0.0/8"), "this network (0.0.0.0/8)"},
		{netip.MustParsePrefix("10.0.0.0/8"), "private"},
		{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT"},
		{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
		{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
		{netip.MustParsePrefix("172.16.0.0/12"), "private"},
		{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
		{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
		{netip.MustParsePrefix("192.31.196.0/24"), "AS112"},
		{netip.MustParsePrefix("192.52.193.0/24"), "AMT"},
		{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
		{netip.MustParsePrefix("192.168.0.0/16"), "private"},
		{netip.MustParsePrefix("192.175.48.0/24"), "AS112"},
		{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
		{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
		{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
		{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
		{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
		{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	}
	v6Ranges = []classRange{
		{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
		{netip.MustParsePrefix("100::/64"), "discard-only"},
		{netip.MustParsePrefix("100:0:0:1::/64"), "dummy prefix"},
		{netip.MustParsePrefix("2001::/32"), "Teredo"},
		{netip.MustParsePrefix("2001:2::/48"), "benchmarking"},
		{netip.MustParsePrefix("2001:10::/28"), "ORCHID"},
		{netip.MustParsePrefix("2001:20::/28"), "ORCHIDv2"},
		{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments"},
		{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
		// 6to4 is refused whole rather than by the IPv4 address it
		// carries: its relays are deprecated (RFC 7526), and a relay is a
		// third party that would carry the call wherever that address is.
		{netip.MustParsePrefix("2002::/16"), "6to4"},
		{netip.MustParsePrefix("2620:4f:8000::/48"), "AS112"},
		{netip.MustParsePrefix("3fff::/20"), "documentation"},
		{netip.MustParsePrefix("5f00::/16"), "SRv6 SIDs"},
		{netip.MustParsePrefix("fc00::/7"), "unique local"},
		{netip.MustParsePrefix("fe80::/10"), "link-local"},
		{netip.MustParsePrefix("fec0::/10"), "site-local"},
		{netip.MustParsePrefix("ff00::/8"), "multicast"},
	}

	// v6GlobalUnicast is the only IPv6 space a target may be in, bar NAT64.
	v6GlobalUnicast = netip.MustParsePrefix("2000::/3")
	// v4Compatible (deprecated by RFC 4291) is refused whole: nothing routes
	// it, and a stack that still does would reach the IPv4 address inside.
	v4Compatible = netip.MustParsePrefix("::/96")
	// v4NAT64 addresses reach the IPv4 address they carry through the
	// network's translator, so they are judged as that address.
	v4NAT64 = netip.MustParsePrefix("64:ff9b::/96")
)

type classRange struct {
	prefix netip.Prefix
	class  string
}

// disallowed reports whether a target may not be addr, and if so what kind
// of address it is, in words fit for an error message. An IPv4-mapped
// address (::ffff:a.b.c.d) is refused whole: it is how a URL writes an IPv4
// address to slip past a check of IPv4 ranges, and no resolver's answer
// reaches here in that form (CheckURL unmaps them).
func disallowed(addr netip.Addr) (class string, bad bool) {
	addr = addr.WithZone("")
	if addr.Is4() {
		return disallowedV4(addr)
	}
	return disallowedV6(addr)
}

func disallowedV4(addr netip.Addr) (string, bool) {
	for _, m := range v4Metadata {
		if addr == m {
			return "cloud metadata", true
		}
	}
	if addr.IsUnspecified() {
		return "unspecified", true
	}
	return inRanges(addr, v4Ranges)
}

func disallowedV6(addr netip.Addr) (string, bool) {
	for _, m := range v6Metadata {
		if addr == m {
			return "cloud metadata", true
		}
	}
	switch {
	case addr.Is4In6():
		return "IPv4-mapped", true
	case addr.IsUnspecified():
		return "unspecified", true
	case addr.IsLoopback():
		return "loopback", true
	case v4Compatible.Contains(addr):
		return "IPv4-compatible", true
	case v4NAT64.Contains(addr):
		b := addr.As16()
		if class, bad := disallowedV4(netip.AddrFrom4([4]byte(b[12:16]))); bad {
			return class + " (NAT64)", true
		}
		return "", false
	}
	if class, bad := inRanges(addr, v6Ranges); bad {
		return class, true
	}
	if !v6GlobalUnicast.Contains(addr) {
		return "reserved", true
	}
	return "", false
}

func inRanges(addr netip.Addr, ranges []classRange) (string, bool) {
	for _, r := range ranges {
		if r.prefix.Contains(addr) {
			return r.class, true
		}
	}
	return "", false
}
