package probe

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// boundExpiry is when token expires, if it is a JWT with an exp claim (a
// bound ServiceAccount token, as `kubectl create token` makes); nil for a
// long-lived Secret-based token, a static token or none. spoke/fleet warns
// of the same thing in text; the check needs the fact.
func boundExpiry(token string) *time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return nil
	}
	s, err := claims.Exp.Int64()
	if err != nil {
		return nil
	}
	t := time.Unix(s, 0).UTC()
	return &t
}

func isForbidden(err error) bool {
	var se apierrors.APIStatus
	return apierrors.IsForbidden(err) || (errors.As(err, &se) && se.Status().Code == 403)
}
