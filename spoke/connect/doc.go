// Package connect opens a broker's spokes (ADR-0046): from a fleet
// cluster block and the broker-scoped Hub secrets it names, a ready
// Kubernetes client for that cluster's tier. The secrets are fetched
// through a Secrets function the broker gives (it signs the Hub call);
// their values are never logged and never appear in an error.
//
// A Pool keeps the one thing that outlives a call: the SSH tunnel of each
// bastion cluster, keyed by the bastion's settings and key, so that every
// Job on that cluster shares one SSH connection and a rotated key or a
// changed known_hosts line opens a new tunnel (the old one is closed).
// The bastion tier's client dials through the tunnel's DialContext — no
// local listener — with TLS verified against the kubeconfig's real API
// host.
package connect
