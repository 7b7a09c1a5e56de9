package wire

import (
	"context"
	"errors"
	"net/http"
)

// FetchBrokerSecret reads the value of broker-scoped secret name from the
// Hub at hubURL with a signed GET
// /api/v1/runtime-brokers/{brokerID}/secrets/{name}/value (the Hub answers
// only the broker the secret is scoped to). A Hub error comes back as an
// *api.Error. Placeholder: the Hub helper implements it.
var FetchBrokerSecret = func(ctx context.Context, hc *http.Client, hubURL, brokerID string, secret []byte, name string) (string, error) {
	return "", errors.New("wire: FetchBrokerSecret not implemented yet")
}
