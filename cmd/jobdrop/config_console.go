package main

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// ConsoleConfig configures the web console.
type ConsoleConfig struct {
	Listen string `yaml:"listen"`
	// Users are the local accounts of the console and the API. None: a
	// console on a loopback address is open to everyone as admin "local";
	// on any other address jobdrop refuses to start.
	Users []ConsoleUser `yaml:"users"`
	// SecureCookies marks the session cookie Secure: set it when the
	// console is reached over HTTPS (through a TLS proxy).
	SecureCookies bool `yaml:"secure_cookies"`
	// Hosts are the names the console answers to, as browsers send them
	// in the Host header, besides localhost and IP addresses. Empty: the
	// name of the listen address, or this machine's host name when it
	// listens on all addresses.
	Hosts []string `yaml:"hosts"`
	// TrustedProxies are the addresses (or CIDR ranges) of reverse proxies
	// in front of the console, whose X-Forwarded-For names the client.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// Timeouts bound slow clients; zero: the defaults.
	Timeouts ConsoleTimeouts `yaml:"timeouts"`
}

// ConsoleTimeouts bound how long one client may hold a connection.
type ConsoleTimeouts struct {
	// ReadHeader bounds a request's line and headers. 0: 10s.
	ReadHeader time.Duration `yaml:"read_header"`
	// Read bounds a whole request, body (an upload) included. 0: 2m.
	Read time.Duration `yaml:"read"`
	// Write bounds an answer; streams get it for each write. 0: 2m.
	Write time.Duration `yaml:"write"`
	// Idle bounds the wait for the next request on a connection. 0: 1m.
	Idle time.Duration `yaml:"idle"`
}

// hostNames are the names the console answers to: console.hosts, or the
// listen address's name, or this machine's name when it listens on all
// addresses. IP addresses need no name.
func (c ConsoleConfig) hostNames() []string {
	if len(c.Hosts) > 0 {
		return c.Hosts
	}
	host, _, _ := net.SplitHostPort(c.Listen)
	ip := net.ParseIP(host)
	switch {
	case host != "" && ip == nil:
		return []string{host} // a name
	case host != "" && !ip.IsUnspecified():
		return nil // one address
	}
	if name, err := os.Hostname(); err == nil {
		return []string{name}
	}
	return nil
}

// proxies reads console.trusted_proxies, validated with the config.
func (c ConsoleConfig) proxies() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range c.TrustedProxies {
		if prefix, err := parseProxy(p); err == nil {
			out = append(out, prefix)
		}
	}
	return out
}

// parseProxy reads an address or a CIDR range.
func parseProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ConsoleUser is one local account.
type ConsoleUser struct {
	Name string `yaml:"name"`
	// PasswordHash is a bcrypt hash, from `jobdrop hash-password` or
	// htpasswd -bnBC 10 "" PASSWORD | tr -d ':\n'.
	PasswordHash string `yaml:"password_hash"`
	// Role is viewer, operator or admin.
	Role string `yaml:"role"`
}

// loopback reports whether a listen address only takes local
// connections.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
