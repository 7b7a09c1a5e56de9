// Package tunnel is the bastion tier of delegated Jobs (ADR-0046 §3b): an
// in-process SSH client (golang.org/x/crypto/ssh, no ssh binary and no
// child process) that reaches a spoke's API server through a bastion.
//
// A Tunnel holds at most one SSH connection to the bastion and opens a
// direct-tcpip channel on it for every DialContext, so it can stand in for
// a net.Dialer in an HTTP transport. Listen pipes a local 127.0.0.1 port
// to one fixed target instead, for a kubeconfig that must name a URL: the
// kubeconfig then points at https://127.0.0.1:<port> with the TLS server
// name set to the real API host, so certificate verification is intact.
//
// The connection is supervised rather than trusted: keepalive@openssh.com
// requests catch a connection that died silently (a NAT or idle timeout
// drops packets without a reset, and in-flight requests would otherwise
// hang on kernel TCP timeouts); a dead connection is closed, and the next
// DialContext reconnects with backoff, bounded by its context. The host key
// is pinned to one known_hosts line; there is no way to skip the check.
package tunnel
