package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fakeResolver answers from a fixed table; a name not in it does not exist.
type fakeResolver map[string][]string

func (r fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, 0, len(ips))
	for _, s := range ips {
		a := netip.MustParseAddr(s)
		out = append(out, net.IPAddr{IP: a.AsSlice(), Zone: a.Zone()})
	}
	return out, nil
}

// refusedAddresses names, for every block of the IANA IPv4 and IPv6
// special-purpose address registries and every other class the guard
// refuses, its first and last address (and any address with a reason of its
// own), with the word the reason must contain.
var refusedAddresses = []struct {
	addr  string
	class string
}{
	// IPv4
	{"0.0.0.0", "unspecified"},
	{"0.0.0.1", "this network"},
	{"0.255.255.255", "this network"},
	{"10.0.0.0", "private"},
	{"10.255.255.255", "private"},
	{"100.64.0.0", "CGNAT"},
	{"100.127.255.255", "CGNAT"},
	{"100.100.100.200", "metadata"},
	{"127.0.0.0", "loopback"},
	{"127.0.0.1", "loopback"},
	{"127.255.255.255", "loopback"},
	{"169.254.0.0", "link-local"},
	{"169.254.255.255", "link-local"},
	{"169.254.169.254", "metadata"},
	{"172.16.0.0", "private"},
	{"172.31.255.255", "private"},
	{"192.0.0.0", "IETF protocol assignments"},
	{"192.0.0.9", "IETF protocol assignments"}, // PCP anycast: globally reachable, still no receiver
	{"192.0.0.170", "IETF protocol assignments"},
	{"192.0.0.255", "IETF protocol assignments"},
	{"192.0.2.0", "documentation"},
	{"192.0.2.255", "documentation"},
	{"192.31.196.0", "AS112"},
	{"192.31.196.255", "AS112"},
	{"192.52.193.0", "AMT"},
	{"192.52.193.255", "AMT"},
	{"192.88.99.0", "6to4 relay anycast"},
	{"192.88.99.255", "6to4 relay anycast"},
	{"192.168.0.0", "private"},
	{"192.168.255.255", "private"},
	{"192.175.48.0", "AS112"},
	{"192.175.48.255", "AS112"},
	{"198.18.0.0", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"198.51.100.0", "documentation"},
	{"198.51.100.255", "documentation"},
	{"203.0.113.0", "documentation"},
	{"203.0.113.255", "documentation"},
	{"224.0.0.0", "multicast"},
	{"239.255.255.255", "multicast"},
	{"240.0.0.0", "reserved"},
	{"255.255.255.254", "reserved"},
	{"255.255.255.255", "broadcast"},
	// IPv6
	{"::", "unspecified"},
	{"::1", "loopback"},
	{"::ffff:0.0.0.0", "IPv4-mapped"},
	{"::ffff:127.0.0.1", "IPv4-mapped"},
	{"::ffff:10.0.0.1", "IPv4-mapped"},
	{"::ffff:169.254.169.254", "IPv4-mapped"},
	{"::ffff:8.8.8.8", "IPv4-mapped"},
	{"::ffff:255.255.255.255", "IPv4-mapped"},
	{"::2", "IPv4-compatible"},
	{"::127.0.0.1", "IPv4-compatible"},
	{"::8.8.8.8", "IPv4-compatible"},
	{"::255.255.255.255", "IPv4-compatible"},
	{"64:ff9b::", "unspecified (NAT64)"},
	{"64:ff9b::0.1.2.3", "this network (0.0.0.0/8) (NAT64)"},
	{"64:ff9b::7f00:1", "loopback (NAT64)"},
	{"64:ff9b::10.0.0.1", "private (NAT64)"},
	{"64:ff9b::169.254.169.254", "metadata (NAT64)"},
	{"64:ff9b::198.18.0.1", "benchmarking (NAT64)"},
	{"64:ff9b::192.0.2.1", "documentation (NAT64)"},
	{"64:ff9b::255.255.255.255", "broadcast (NAT64)"},
	{"64:ff9b:1::", "local-use NAT64"},
	{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "local-use NAT64"},
	{"100::", "discard-only"},
	{"100::ffff:ffff:ffff:ffff", "discard-only"},
	{"100:0:0:1::", "dummy prefix"},
	{"100:0:0:1:ffff:ffff:ffff:ffff", "dummy prefix"},
	{"2001::", "Teredo"},
	{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "Teredo"},
	{"2001:1::1", "IETF protocol assignments"},
	{"2001:2::", "benchmarking"},
	{"2001:2:0:ffff:ffff:ffff:ffff:ffff", "benchmarking"},
	{"2001:3::1", "IETF protocol assignments"},
	{"2001:4:112::1", "IETF protocol assignments"},
	{"2001:10::", "ORCHID"},
	{"2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "ORCHID"},
	{"2001:20::", "ORCHIDv2"},
	{"2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", "ORCHIDv2"},
	{"2001:30::1", "IETF protocol assignments"},
	{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "IETF protocol assignments"},
	{"2001:db8::", "documentation"},
	{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
	{"2002::", "6to4"},
	{"2002:7f00:1::1", "6to4"},
	{"2002:808:808::1", "6to4"}, // a public IPv4 address inside: refused all the same
	{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "6to4"},
	{"2620:4f:8000::", "AS112"},
	{"2620:4f:8000:ffff:ffff:ffff:ffff:ffff", "AS112"},
	{"3fff::", "documentation"},
	{"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
	{"5f00::", "SRv6"},
	{"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "SRv6"},
	{"fc00::", "unique local"},
	{"fd12:3456::1", "unique local"},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique local"},
	{"fd00:ec2::254", "metadata"},
	{"fe80::", "link-local"},
	{"fe80::1%eth0", "link-local"},
	{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
	{"fec0::", "site-local"},
	{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local"},
	{"ff00::", "multicast"},
	{"ff02::1", "multicast"},
	{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
	// IPv6 outside 2000::/3, the global unicast space
	{"::1:0:0:0", "reserved"},
	{"200::1", "reserved"},
	{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
	{"4000::", "reserved"},
	{"e000::1", "reserved"},
}

// allowedAddresses are public: among them the neighbours of the refused
// blocks, so a block written too wide shows here.
var allowedAddresses = []string{
	"8.8.8.8",
	"1.1.1.1",
	"93.184.216.34",
	"1.0.0.0", "9.255.255.255", "11.0.0.0",
	"100.63.255.255", "100.128.0.0",
	"126.255.255.255", "128.0.0.0",
	"169.253.255.255", "169.255.0.0",
	"172.15.255.255", "172.32.0.0",
	"191.255.255.255", "192.0.1.0", "192.0.1.255", "192.0.3.0",
	"192.31.195.255", "192.31.197.0",
	"192.52.192.255", "192.52.194.0",
	"192.88.98.255", "192.88.100.0",
	"192.167.255.255", "192.169.0.0",
	"192.175.47.255", "192.175.49.0",
	"198.17.255.255", "198.20.0.0",
	"198.51.99.255", "198.51.101.0",
	"203.0.112.255", "203.0.114.0",
	"223.255.255.255",
	"2606:4700:4700::1111",
	"2001:4860:4860::8888",
	"2000::", "2001:200::", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::",
	"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2003::",
	"2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", "2620:4f:8001::",
	"3ffe:ffff::1", "3fff:1000::",
	"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	"64:ff9b::808:808", // NAT64 of a public IPv4 address
	"64:ff9b::1.1.1.1",
}

// urlFor writes addr as the host of an https URL.
func urlFor(addr string) string {
	a := netip.MustParseAddr(addr)
	if a.Is4() {
		return "https://" + addr + "/hook"
	}
	return "https://[" + strings.Replace(addr, "%", "%25", 1) + "]:8443/hook"
}

func TestCheckURLRefusesEveryClassOfAddress(t *testing.T) {
	ctx := context.Background()
	for _, tc := range refusedAddresses {
		t.Run(tc.addr, func(t *testing.T) {
			err := Guard{}.CheckURL(ctx, urlFor(tc.addr))
			assertAddressRefused(t, err, tc.class)
			if err != nil && strings.Contains(err.Error(), netip.MustParseAddr(tc.addr).WithZone("").String()) {
				t.Errorf("reason %q quotes the address", err)
			}
			if err := (Guard{AllowPrivate: true}).CheckURL(ctx, urlFor(tc.addr)); err != nil {
				t.Errorf("AllowPrivate: %v", err)
			}
		})
	}
}

func TestCheckURLRefusesNamesResolvingToEveryClass(t *testing.T) {
	ctx := context.Background()
	for _, tc := range refusedAddresses {
		if netip.MustParseAddr(tc.addr).Is4In6() {
			// A resolver's answer in this form is its IPv4 address:
			// TestCheckURLJudgesResolvedIPv4AsIPv4.
			continue
		}
		t.Run(tc.addr, func(t *testing.T) {
			r := fakeResolver{
				"hooks.example.com": {tc.addr},
				// One bad address among good ones is enough to refuse.
				"mixed.example.com": {"8.8.8.8", tc.addr, "2606:4700:4700::1111"},
			}
			for _, host := range []string{"hooks.example.com", "mixed.example.com"} {
				err := Guard{Resolver: r}.CheckURL(ctx, "https://"+host+"/notify?k=v")
				assertAddressRefused(t, err, tc.class)
				if err := (Guard{AllowPrivate: true, Resolver: r}).CheckURL(ctx, "https://"+host+"/notify"); err != nil {
					t.Errorf("%s with AllowPrivate: %v", host, err)
				}
			}
		})
	}
}

// net.IP holds an IPv4 address in 4 bytes or in 16 (::ffff:a.b.c.d) and the
// dialer connects to either as IPv4, so a resolved address in the 16-byte
// form is judged as its IPv4 address, while a URL that writes it so is
// refused.
func TestCheckURLJudgesResolvedIPv4AsIPv4(t *testing.T) {
	ctx := context.Background()
	in16 := func(s string) []net.IPAddr { return []net.IPAddr{{IP: net.ParseIP(s).To16()}} }
	r := staticResolver{"public.example.com": in16("8.8.8.8"), "private.example.com": in16("10.0.0.1")}
	if err := (Guard{Resolver: r}).CheckURL(ctx, "https://public.example.com/"); err != nil {
		t.Errorf("a public IPv4 address in 16 bytes: %v", err)
	}
	assertAddressRefused(t, Guard{Resolver: r}.CheckURL(ctx, "https://private.example.com/"), "private")
	assertAddressRefused(t, Guard{}.CheckURL(ctx, "https://[::ffff:8.8.8.8]/"), "IPv4-mapped")
}

type staticResolver map[string][]net.IPAddr

func (r staticResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	return r[host], nil
}

func TestCheckURLAllowsPublicAddresses(t *testing.T) {
	ctx := context.Background()
	r := fakeResolver{"public.example.com": allowedAddresses}
	for _, addr := range allowedAddresses {
		if err := (Guard{Resolver: r}).CheckURL(ctx, urlFor(addr)); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, raw := range []string{
		"https://public.example.com/notify",
		"http://public.example.com:8080/notify?a=b#frag",
		"HTTPS://PUBLIC.EXAMPLE.COM/",
	} {
		err := Guard{Resolver: fakeResolver{"public.example.com": allowedAddresses, "PUBLIC.EXAMPLE.COM": allowedAddresses}}.CheckURL(ctx, raw)
		if err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestCheckURLRefusesMalformedURLs(t *testing.T) {
	ctx := context.Background()
	secretPath := "https://user:hunter2@example.com/"
	cases := []struct {
		raw    string
		reason string
	}{
		{"", "is required"},
		{"https://example.com/" + strings.Repeat("a", MaxURLLen), "longer than"},
		{"ftp://example.com/", "scheme"},
		{"file:///etc/passwd", "scheme"},
		{"gopher://example.com/", "scheme"},
		{"javascript:alert(1)", "scheme"},
		{"example.com/hook", "scheme"},
		{"//example.com/hook", "scheme"},
		{"http:example.com", "absolute URL with a host"},
		{"https:///path", "absolute URL with a host"},
		{"https://:443/path", "absolute URL with a host"},
		{secretPath, "user name or password"},
		{"https://user@example.com/", "user name or password"},
		{"https://example.com:0/", "port"},
		{"https://example.com:65536/", "port"},
		{"https://example.com:99999999999999999999/", "port"},
		{"https://example.com:port/", "not a valid URL"},
		{"https://exa mple.com/", "not a valid URL"},
		{"https://example.com/\x7f", "not a valid URL"},
		{"https://[::1/", "not a valid URL"},
	}
	for _, tc := range cases {
		for _, g := range []Guard{{}, {AllowPrivate: true}} {
			err := g.CheckURL(ctx, tc.raw)
			var te *TargetError
			if !errors.As(err, &te) {
				t.Errorf("%q (AllowPrivate %v): err = %v, want a *TargetError", tc.raw, g.AllowPrivate, err)
				continue
			}
			if te.Field != "url" || !strings.Contains(te.Reason, tc.reason) {
				t.Errorf("%q: %+v, want field url and a reason containing %q", tc.raw, te, tc.reason)
			}
			if errors.Is(err, ErrAddressNotAllowed) {
				t.Errorf("%q: a malformed URL counts as an address refusal", tc.raw)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%q: reason quotes the password", tc.raw)
			}
		}
	}
}

func TestCheckURLRefusesNamesThatDoNotResolve(t *testing.T) {
	r := fakeResolver{"empty.example.com": {}}
	for _, host := range []string{"nowhere.example.com", "empty.example.com"} {
		err := Guard{Resolver: r}.CheckURL(context.Background(), "https://"+host+"/")
		var te *TargetError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, "could not be resolved") {
			t.Errorf("%s: err = %v, want a *TargetError saying it could not be resolved", host, err)
		}
	}
}

func TestDialControlRefusesEveryClassOfAddress(t *testing.T) {
	for _, tc := range refusedAddresses {
		t.Run(tc.addr, func(t *testing.T) {
			address := net.JoinHostPort(tc.addr, "443")
			assertAddressRefused(t, Guard{}.DialControl("tcp", address, nil), tc.class)
			if err := (Guard{AllowPrivate: true}).DialControl("tcp", address, nil); err != nil {
				t.Errorf("%s with AllowPrivate: %v", address, err)
			}
		})
	}
	for _, addr := range allowedAddresses {
		address := net.JoinHostPort(addr, "443")
		if err := (Guard{}).DialControl("tcp6", address, nil); err != nil {
			t.Errorf("%s: %v", address, err)
		}
	}
	for _, address := range []string{"", "127.0.0.1", "localhost:80", "[::1]"} {
		if err := (Guard{}).DialControl("tcp", address, nil); !errors.Is(err, ErrAddressNotAllowed) {
			t.Errorf("%q: err = %v, want ErrAddressNotAllowed (fail closed)", address, err)
		}
	}
}

// A real dial to a loopback listener: refused before connecting by the
// guard, let through with AllowPrivate.
func TestDialControlOnARealDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Both the address and a name that resolves to it are refused: the
	// check is on what is dialled.
	for _, target := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		d := net.Dialer{Control: Guard{}.DialControl}
		c, err := d.DialContext(ctx, "tcp4", target)
		if err == nil {
			c.Close()
			t.Fatalf("dial %s through the guard connected", target)
		}
		if !errors.Is(err, ErrAddressNotAllowed) {
			t.Errorf("dial %s: %v, want ErrAddressNotAllowed", target, err)
		}
	}

	d := net.Dialer{Control: Guard{AllowPrivate: true}.DialControl}
	c, err := d.DialContext(ctx, "tcp4", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial with AllowPrivate: %v", err)
	}
	c.Close()
	select {
	case <-accepted:
	case <-ctx.Done():
		t.Fatal("the listener never saw the connection")
	}
	if n := len(accepted); n != 0 {
		t.Errorf("the listener accepted %d more connections than the one allowed", n)
	}
}

func assertAddressRefused(t *testing.T, err error, class string) {
	t.Helper()
	var te *TargetError
	switch {
	case !errors.As(err, &te):
		t.Errorf("err = %v, want a *TargetError", err)
	case !errors.Is(err, ErrAddressNotAllowed):
		t.Errorf("err = %v, want ErrAddressNotAllowed", err)
	case te.Field != "url" || !strings.Contains(te.Reason, class):
		t.Errorf("err = %+v, want field url and a reason naming %q", te, class)
	case !strings.Contains(te.Reason, "TASKHOOK_ALLOW_PRIVATE_TARGETS=true"):
		t.Errorf("err = %+v, want the reason to name the setting that allows the address", te)
	}
}

// FuzzCheckURL feeds arbitrary URLs to CheckURL with a resolver that gives
// each name a mix of allowed and refused addresses. It must not panic, must
// refuse only with a *TargetError that does not quote the URL, and must agree
// with DialControl: every address of a URL it accepts is one DialControl
// would connect to.
func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"https://example.com/hook",
		"http://example.com:8080/a?b=c#d",
		"https://127.0.0.1/",
		"https://[::ffff:10.0.0.1]/",
		"https://[64:ff9b::a00:1]:443/",
		"https://[fe80::1%25eth0]/",
		"https://user:pass@example.com/",
		"https://example.com:0/",
		"ftp://example.com/",
		"http://0177.0.0.1/",
		"http://2130706433/",
		"https://a.example/",
		"https://ab.example/",
		"//x",
		"https://[::1",
		"http://%41.example/",
	} {
		f.Add(seed)
	}
	pool := []string{"8.8.8.8", "10.0.0.1", "2606:4700:4700::1111", "::1", "169.254.169.254", "93.184.216.34", "::ffff:192.168.0.1"}
	guard := Guard{Resolver: poolResolver(pool)}
	f.Fuzz(func(t *testing.T, raw string) {
		err := guard.CheckURL(context.Background(), raw)
		if err != nil {
			var te *TargetError
			if !errors.As(err, &te) || te.Field != "url" || te.Reason == "" {
				t.Fatalf("err = %#v, want a *TargetError for field url", err)
			}
			if len(raw) >= 8 && strings.Contains(err.Error(), raw) {
				t.Fatalf("reason %q quotes the URL", err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("accepted %q", raw)
		}
		host := u.Hostname()
		if addr, aerr := netip.ParseAddr(host); aerr == nil {
			if derr := guard.DialControl("tcp", net.JoinHostPort(addr.String(), "443"), nil); derr != nil {
				t.Fatalf("accepted %q, whose address DialControl refuses: %v", raw, derr)
			}
			return
		}
		addrs, _ := guard.Resolver.LookupIPAddr(context.Background(), host)
		for _, a := range addrs {
			if derr := guard.DialControl("tcp", net.JoinHostPort(a.String(), "443"), nil); derr != nil {
				t.Fatalf("accepted %q, which resolves to %s that DialControl refuses: %v", raw, a.String(), derr)
			}
		}
	})
}

// poolResolver gives a name one or two addresses from pool, chosen by the
// name's length, so that some names resolve only to allowed addresses and
// others to refused ones.
type poolResolver []string

func (p poolResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if host == "" {
		return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
	}
	var out []net.IPAddr
	for _, i := range []int{len(host) % len(p), (len(host) * 3) % len(p)} {
		out = append(out, net.IPAddr{IP: netip.MustParseAddr(p[i]).AsSlice()})
	}
	return out, nil
}
