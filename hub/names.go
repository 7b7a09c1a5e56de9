package hub

import (
	"regexp"

	"github.com/scion-go/scion/api"
)

// Names of projects, brokers and agents: lower-case DNS-label style, so
// they are safe in container names, labels and paths.
var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func validName(kind, n string) error {
	if !nameRE.MatchString(n) {
		return api.BadRequest("invalid %s name %q: use 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit", kind, n)
	}
	return nil
}
