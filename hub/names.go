package hub

import "github.com/scion-go/scion/api"

// validName applies the one name rule (api.ValidName) to the names of
// projects, brokers, agents and tokens: the CLI checks the same rule
// before a request is sent.
func validName(kind, n string) error { return api.CheckName(kind, n) }

// validProfile checks a profile named in a request or a project's
// settings ("" means none): a profile name is a path segment and a label
// on the broker, so it follows the name rule too.
func validProfile(field, n string) error {
	if n == "" || api.ValidName(n) {
		return nil
	}
	return api.BadRequest("invalid %s %s: a profile name is 1-%d lower-case letters, digits and '-', starting and ending with a letter or digit",
		field, api.Quote(n), api.MaxNameLen)
}
