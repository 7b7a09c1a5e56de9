package hub

import "github.com/scion-go/scion/api"

// validName applies the one name rule (api.ValidName) to the names of
// projects, brokers, agents and tokens: the CLI checks the same rule
// before a request is sent.
func validName(kind, n string) error { return api.CheckName(kind, n) }
