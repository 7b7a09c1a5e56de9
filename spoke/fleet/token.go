package fleet

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// boundTokenWarning says whether token is a JWT with an exp claim: a bound
// ServiceAccount token (kubectl create token), which expires (1 h by
// default) mid-Job and mid-log-poll. A long-lived Secret-based token has
// no exp. Anything that is not a JWT gives no warning.
func boundTokenWarning(cluster, token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return ""
	}
	when := ""
	if s, err := claims.Exp.Int64(); err == nil {
		when = " at " + time.Unix(s, 0).UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("cluster %s: the kubeconfig's token is a bound ServiceAccount token that expires%s: it would expire mid-Job; use a long-lived Secret-based token (docs/spokes.md)", cluster, when)
}
