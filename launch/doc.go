// Package launch starts the long-running parts of the scion binary: a Hub
// (scion server start), with the workstation's in-process broker beside it
// (--workstation), and a Runtime Broker on its own (scion runtime-broker
// start). It is the wiring between the packages that do the work: it opens
// the store (SQLite or PostgreSQL), picks and builds the runtime (Docker,
// Kubernetes, process, fake), loads the secrets key and the OIDC
// configuration, listens, forwards the agents' network to a loopback Hub,
// and registers the workstation's broker.
//
// It is called launch for that one job, starting daemons from options,
// and to keep it apart from what it starts (hub, broker): it holds no
// server or broker logic of its own. Package cli parses the flags into
// config.ServerOptions and config.BrokerOptions and reaches this package
// only through the cli.Daemons that cmd/scion fills in, so that the CLI
// imports none of the Hub, the stores or the runtimes (internal/deptest
// holds that rule).
package launch
