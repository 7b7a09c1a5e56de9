package api

import (
	"regexp"
	"strings"
)

// Credentials in URLs: a proxy_url, a git remote or a kubeconfig's server
// may carry user:password@ (or a token as the user), and error text
// quotes them (ours, and libraries' such as client-go's "invalid
// 'proxy-url' %q"). Every message and log line that may hold a URL goes
// through RedactURLs: the user is dropped with the password, since a
// token is often written as the user.

// urlUserinfo is the userinfo of a URL with a scheme: greedy to the last
// @ before the path, a space or a quote, so that an unescaped @ in a
// password leaves no tail behind.
var urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s'"]*@`)

// bareUserinfo is user:password@host written without a scheme (a
// proxy_url missing its http://, a bastion host "user:pw@host"), at the
// start of a word. A colon is required, so user@host and git@host:path
// (no secret) stay.
var bareUserinfo = regexp.MustCompile(`(^|[\s'"(=,<\[])[^\s/'"@:=,()<\[]+:[^\s/'"@]*@`)

// Redacted replaces the userinfo of a URL, and a credential-like value
// in what the Hub returns.
const Redacted = "***"

// RedactURLs replaces the userinfo (user and password) of every URL in s
// with Redacted: "ftp://user:hunter2@p:3128" reads "ftp://***@p:3128".
func RedactURLs(s string) string {
	s = urlUserinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	return bareUserinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
}

// RedactURL redacts one value that is meant to be a URL or host (a
// proxy_url, a bastion host), however malformed: everything before its
// last @ (after a scheme's "//") is userinfo. A password with a space or
// a quote, which RedactURLs cannot tell from the text around it, goes too.
func RedactURL(v string) string {
	at := strings.LastIndex(v, "@")
	if at < 0 {
		return RedactURLs(v)
	}
	start := 0
	if i := strings.Index(v, "://"); i >= 0 && i < at {
		start = i + 3
	}
	return v[:start] + Redacted + v[at:]
}

// RedactError is err with RedactURLs over its text; errors.Is and As still
// see err (whose own text is then the caller's to redact).
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := RedactURLs(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// secretHints are parts of environment variable names that mark a value
// as a credential. The Hub never returns such values: an agent's env is
// shown with them replaced, so a token passed with --env cannot leak
// through `scion list -o json` or a log of API responses.
var secretHints = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE"}

func looksSecret(name string) bool {
	u := strings.ToUpper(name)
	for _, h := range secretHints {
		if strings.Contains(u, h) {
			return true
		}
	}
	return false
}

// RedactEnv returns env with credential-like values replaced.
func RedactEnv(env map[string]string) map[string]string {
	if len(env) == 0 {
		return env
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if looksSecret(k) && v != "" {
			v = Redacted
		}
		out[k] = v
	}
	return out
}
