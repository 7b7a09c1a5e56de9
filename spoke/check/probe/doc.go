// Package probe is the I/O of `scion check`: it reaches each spoke of the
// broker's fleet over its tier and asks the spoke what its kubeconfig's
// identity may do (SelfSubjectAccessReviews), asks the broker's own
// cluster what the agents' sandbox ServiceAccount may do
// (SubjectAccessReviews) and reads that account, then hands what it saw to
// spoke/check, which decides. Run is the whole command, from settings.yaml,
// the fleet file and the broker's stored credentials.
package probe
