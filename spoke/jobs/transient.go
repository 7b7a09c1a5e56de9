package jobs

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Transient reports whether a failed request to a spoke may succeed if
// tried again: an answer of 5xx, 429 or 408 (or a server timeout), and
// every failure with no answer at all (a dial, a tunnel that is
// reconnecting, a proxy, a timeout: fleet's *UnreachableError and any
// other transport error). An answer that refuses (401, 403, 400, 422,
// ...) is not: asking again gets the same answer. 404 is not transient
// either; Follow takes it as the Job deleted.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true // no answer from the API server: network, tunnel, timeout
	}
	code := int(st.Status().Code)
	switch {
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout:
		return true
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	}
	return false
}
