package api

import (
	"context"
	"fmt"
	"log/slog"
)

// RedactHandler is h with the userinfo of every URL in a record's message
// and attributes redacted (RedactURLs) before h writes it: the daemons'
// log lines quote errors from our code and from libraries (client-go,
// git, net/http), any of which may carry a proxy's or remote's password.
// It is the last guard: messages are redacted where they are made as
// well. A handler that redacts already is returned as it is.
func RedactHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(redactHandler); ok {
		return h
	}
	return redactHandler{h}
}

type redactHandler struct{ next slog.Handler }

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, RedactURLs(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a)
	}
	return redactHandler{h.next.WithAttrs(red)}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.next.WithGroup(name)}
}

// redactAttr redacts a string, an error or anything printed with %v
// (a URL, a Stringer); numbers, times and the like pass as they are.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, RedactURLs(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = redactAttr(x)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if r := RedactURLs(s); r != s {
			return slog.String(a.Key, r)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
