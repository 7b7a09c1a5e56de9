package httpapi

import (
	"regexp"
	"strings"
)

// Transport errors name the sockets they failed on ("read tcp
// 127.0.0.1:8080->127.0.0.1:51234: connection reset by peer", "dial unix
// /run/scion/broker.sock: ..."). Those are internal addresses: a message
// that reaches a caller (an error answer, an agent's status message) has
// them replaced.
var (
	// hostPort: an IPv4 address, a bracketed IPv6 address, or a host
	// name, followed by :port.
	hostPort = regexp.MustCompile(`(?:\[[0-9A-Fa-f:.%\w]+\]|\b(?:\d{1,3}\.){3}\d{1,3}|\b[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*):\d{1,5}\b`)
	// unixSocket: a unix socket URL or a path ending in .sock.
	unixSocket = regexp.MustCompile(`unix://\S+|(?:^|[\s"'(=])/\S*\.sock\b`)
)

const hiddenAddr = "<address>"

// ScrubAddresses replaces internal addresses in msg. A host name must
// hold a letter, so that "10:40" or a count like "3:1" stays as it is.
func ScrubAddresses(msg string) string {
	if !strings.Contains(msg, ":") && !strings.Contains(msg, ".sock") {
		return msg
	}
	msg = hostPort.ReplaceAllStringFunc(msg, func(m string) string {
		host := m[:strings.LastIndexByte(m, ':')]
		if !strings.HasPrefix(host, "[") && !strings.ContainsAny(host, ".") && strings.Trim(host, "0123456789") == "" {
			return m // digits only: a time or a ratio, not a host
		}
		return hiddenAddr
	})
	return unixSocket.ReplaceAllStringFunc(msg, func(m string) string {
		if i := strings.IndexByte(m, '/'); i > 0 && !strings.HasPrefix(m, "unix://") {
			return m[:i] + hiddenAddr
		}
		return hiddenAddr
	})
}
