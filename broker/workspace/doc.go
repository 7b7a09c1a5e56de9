// Package workspace makes and removes agents' workspaces on a Runtime
// Broker's host: the directory layout under the broker's data directory,
// the git work of each sharing mode (an empty directory, a clone, a
// worktree over a per-project base clone, one shared checkout), the
// record of where each agent's workspace is, and the rules that keep a
// project's git remote from reaching files it must not (local remotes only
// under the roots the operator names, resolved physically; git run with
// the machine's configuration kept out, in a fixed empty directory).
//
// It imports only api, wire (the agent spec) and internal/keylock: the
// broker daemon drives it through its Workspaces interface, and nothing
// here knows the Hub, the runtimes or the control channel.
package workspace
