package identity

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// signatureWindow is how far a broker's request timestamp may be from the
// Hub's clock; its nonce is kept in the database that long after it.
const signatureWindow = 5 * time.Minute

// verifyBroker checks the signed headers of a broker's request r: the
// HMAC over method, path, query and body hash, the timestamp window, and
// that the nonce was never used, recorded in the database by one insert
// that fails on a duplicate, so a request captured before a Hub restart
// (or sent to another replica) cannot be replayed. The signature is
// checked first: a forged request writes nothing.
// ctx is authentication's (the system's): there is no caller yet.
func (s *Service) verifyBroker(ctx context.Context, r *http.Request, brokerID string, secret []byte) error {
	refuse := func(reason string, msg string) error {
		s.log.Warn("broker authentication failed", "broker", brokerID, "reason", reason)
		return api.Unauthorized(msg)
	}
	body, err := readSignedBody(r)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	n, err := wire.VerifySignature(brokerID, secret, wire.SignedRequest{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Body: body},
		r.Header, now, signatureWindow)
	switch {
	case errors.Is(err, wire.ErrOldSignature):
		return refuse(err.Error(), "invalid broker credentials: the request is not signed with signature version "+wire.SignatureVersion+"; upgrade the runtime broker")
	case err != nil:
		return refuse(err.Error(), "invalid broker credentials")
	}
	switch err := s.store.UseNonce(ctx, brokerID, n.Value, now, n.ForgetAt); {
	case isExists(err):
		return refuse(wire.ErrReplay.Error(), "invalid broker credentials")
	case isNotFound(err): // deregistered meanwhile
		return refuse("unknown broker", "invalid broker credentials")
	case err != nil:
		return err
	}
	return nil
}

// readSignedBody reads r's body (bounded like every request body) for its
// hash and puts it back for the handler.
func readSignedBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, api.MaxRequestBody+1))
	_ = r.Body.Close()
	if err != nil {
		return nil, api.BadRequest("reading the request body: %v", err)
	}
	if len(body) > api.MaxRequestBody {
		return nil, api.Errorf(api.CodeRequestTooLarge, "request body exceeds %d bytes", api.MaxRequestBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}
