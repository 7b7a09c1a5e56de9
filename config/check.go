package config

import "time"

// CheckOptions are the flags of `scion check` (ADR-0046's probes, run on
// a broker host); package launch runs the check from them.
type CheckOptions struct {
	// ClustersPath is --clusters: the fleet file ("" is clusters.toml
	// beside settings.yaml, and a missing one is an empty fleet).
	ClustersPath string
	// Profile is --profile: only that broker profile's clusters and
	// namespace ("" every profile's, and the file's clusters).
	Profile string
	// Cluster is --cluster: only that spoke.
	Cluster string
	// Timeout bounds reaching each cluster: the connect steps and each
	// request (0 is the spokes' default connect timeout).
	Timeout time.Duration
	// KubeconfigFiles are --kubeconfig-secret-file NAME=PATH: the value
	// of secret NAME read from PATH instead of the Hub (an offline check,
	// or one before the secret is stored).
	KubeconfigFiles map[string]string
}
