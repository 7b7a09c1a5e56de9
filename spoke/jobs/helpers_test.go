package jobs

import (
	"errors"

	"github.com/scion-go/scion/api"
)

func asAPIError(err error, target **api.Error) bool { return errors.As(err, target) }
