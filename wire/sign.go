package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Broker request signing: a broker proves it holds its secret by an
// HMAC-SHA256 over the whole request that matters (method, path, query
// string, a hash of the body), its broker ID, the time and a nonce. The
// Hub accepts a signature within a time window, and once: it records the
// nonce in its database until the window has passed (store.BrokerNonces),
// so a captured request cannot be replayed even after a Hub restart.

// Signature headers.
const (
	HeaderBrokerID  = "X-Scion-Broker-ID"
	HeaderTimestamp = "X-Scion-Timestamp"
	HeaderNonce     = "X-Scion-Nonce"
	HeaderSignature = "X-Scion-Signature"
	// HeaderSignatureVersion names the string the signature covers; a
	// request without the current version is refused before anything
	// else, with a message saying so (an older broker's signature would
	// only fail to match).
	HeaderSignatureVersion = "X-Scion-Signature-Version"
)

// SignatureVersion is the current signing scheme: 2 covers the query
// string, the body's hash and the broker ID (1 covered method, path,
// time and nonce only).
const SignatureVersion = "2"

// maxNonceLen bounds what a nonce may cost the Hub's nonce table (ours
// are 32 hex characters).
const maxNonceLen = 128

// SignedRequest is what a signature covers besides the broker, the time
// and the nonce. RawQuery is the query string as sent (no "?"); Body is
// the whole body (nil for none).
type SignedRequest struct {
	Method, Path, RawQuery string
	Body                   []byte
}

// Sign returns the hex HMAC-SHA256 of, joined by "\n": "scion-broker-v2",
// the broker ID, method, path, raw query, ts in unix seconds, nonce and
// the hex SHA-256 of the body.
func Sign(secret []byte, brokerID string, r SignedRequest, ts time.Time, nonce string) string {
	body := sha256.Sum256(r.Body)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strings.Join([]string{"scion-broker-v" + SignatureVersion, brokerID, r.Method, r.Path, r.RawQuery,
		strconv.FormatInt(ts.Unix(), 10), nonce, hex.EncodeToString(body[:])}, "\n")))
	return hex.EncodeToString(m.Sum(nil))
}

// SignHeaders sets the signature headers on h for request r at now, with
// a fresh random nonce.
func SignHeaders(h http.Header, brokerID string, secret []byte, r SignedRequest, now time.Time) {
	var n [16]byte
	_, _ = rand.Read(n[:]) // crypto/rand.Read never fails (it crashes instead)
	nonce := hex.EncodeToString(n[:])
	h.Set(HeaderBrokerID, brokerID)
	h.Set(HeaderSignatureVersion, SignatureVersion)
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderNonce, nonce)
	h.Set(HeaderSignature, Sign(secret, brokerID, r, now, nonce))
}

// Nonce is the nonce of an authentic request and when it may be
// forgotten: once its timestamp has left the window, the timestamp check
// refuses a replay by itself.
type Nonce struct {
	Value    string
	ForgetAt time.Time
}

// Verification errors; VerifySignature wraps them with detail.
var (
	ErrBadSignature = errors.New("wire: bad request signature")
	ErrOldSignature = errors.New("wire: request signed with an unsupported signature version")
	ErrStale        = errors.New("wire: request timestamp outside the allowed window")
	ErrReplay       = errors.New("wire: nonce already used")
)

// VerifySignature checks the signature headers in h for request r by
// brokerID with the given secret at now, accepting timestamps within
// window of now. It returns the request's nonce, which the caller must
// record and refuse to see again until Nonce.ForgetAt (the Hub: a
// database insert that fails on a duplicate). It is pure: only an
// authentic request gets to spend nonce space.
func VerifySignature(brokerID string, secret []byte, r SignedRequest, h http.Header, now time.Time, window time.Duration) (Nonce, error) {
	if got := h.Get(HeaderBrokerID); got != brokerID {
		return Nonce{}, fmt.Errorf("%w: broker ID header %q does not match %q", ErrBadSignature, got, brokerID)
	}
	if v := h.Get(HeaderSignatureVersion); v != SignatureVersion {
		return Nonce{}, fmt.Errorf("%w: %q, want %s", ErrOldSignature, v, SignatureVersion)
	}
	tsText, nonce, sig := h.Get(HeaderTimestamp), h.Get(HeaderNonce), h.Get(HeaderSignature)
	if tsText == "" || nonce == "" || sig == "" {
		return Nonce{}, fmt.Errorf("%w: missing %s, %s or %s", ErrBadSignature, HeaderTimestamp, HeaderNonce, HeaderSignature)
	}
	if len(nonce) > maxNonceLen {
		return Nonce{}, fmt.Errorf("%w: nonce longer than %d", ErrBadSignature, maxNonceLen)
	}
	secs, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return Nonce{}, fmt.Errorf("%w: timestamp %q is not unix seconds", ErrBadSignature, tsText)
	}
	ts := time.Unix(secs, 0)
	if skew := now.Sub(ts); skew > window || skew < -window {
		return Nonce{}, fmt.Errorf("%w: timestamp is %v off (window %v)", ErrStale, skew.Round(time.Second), window)
	}
	want, err := hex.DecodeString(Sign(secret, brokerID, r, ts, nonce))
	got, err2 := hex.DecodeString(sig)
	if err != nil || err2 != nil || !hmac.Equal(got, want) {
		return Nonce{}, fmt.Errorf("%w: signature does not match %s %s", ErrBadSignature, r.Method, r.Path)
	}
	return Nonce{Value: nonce, ForgetAt: ts.Add(window)}, nil
}
