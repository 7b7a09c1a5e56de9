// Package fleet is the broker's description of the remote clusters
// ("spokes") that delegated Jobs may run on (ADR-0046): the fleet file
// clusters.toml, a profile's overrides of it, the reachability tier of each
// cluster, and a per-call Kubernetes client config built from a cluster's
// kubeconfig for that tier. Nothing here is global: every client is built
// for one call from the bytes of the kubeconfig the Hub delivers.
//
// The SSH tier's tunnel is not here: it plugs in through Dialer
// (spoke/tunnel implements it), so that this package stays free of SSH.
package fleet
