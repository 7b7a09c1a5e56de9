package show

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/util/jsonpath"
)

// Output kinds of -o: the people's table (wide: with more columns), and
// the structured forms for scripts.
const (
	KindTable    = "table"
	KindWide     = "wide"
	KindJSON     = "json"
	KindYAML     = "yaml"
	KindJSONPath = "jsonpath"
	KindTemplate = "go-template"
)

// Format is a parsed -o value: its kind and, for jsonpath and
// go-template, the expression (already parsed, so that a typo is a usage
// error before the command calls the Hub).
type Format struct {
	Kind string
	Expr string
	jp   *jsonpath.JSONPath
	tmpl *template.Template
}

// FormatHelp is the -o flag's help.
const FormatHelp = "output format: table, wide (more columns), json, yaml, jsonpath=<expr> (kubectl's syntax; a list is the top level: " +
	"'{[*].slug}', '{range [*]}{.slug}{\"\\n\"}{end}') or go-template=<template>"

// ParseFormat reads -o. A jsonpath or template expression is given after
// '=' ("jsonpath={.slug}"); "template=" is go-template's short name.
func ParseFormat(s string) (Format, error) {
	kind, expr, hasExpr := strings.Cut(s, "=")
	switch kind {
	case KindTable, KindWide, KindJSON, KindYAML:
		if hasExpr {
			return Format{}, fmt.Errorf("invalid --output %q: %s takes no expression", s, kind)
		}
		return Format{Kind: kind}, nil
	case KindJSONPath:
		if expr == "" {
			return Format{}, fmt.Errorf("invalid --output %q: give the expression, as in jsonpath='{.slug}'", s)
		}
		jp := jsonpath.New("output")
		if err := jp.Parse(expr); err != nil {
			return Format{}, fmt.Errorf("invalid --output %q: %v", s, err)
		}
		return Format{Kind: kind, Expr: expr, jp: jp}, nil
	case KindTemplate, "template":
		if expr == "" {
			return Format{}, fmt.Errorf("invalid --output %q: give the template, as in go-template='{{.slug}}'", s)
		}
		t, err := template.New("output").Option("missingkey=error").Parse(expr)
		if err != nil {
			return Format{}, fmt.Errorf("invalid --output %q: %v", s, err)
		}
		return Format{Kind: KindTemplate, Expr: expr, tmpl: t}, nil
	}
	return Format{}, fmt.Errorf("invalid --output %q: use table, wide, json, yaml, jsonpath=<expr> or go-template=<template>", s)
}

// Structured reports whether f prints data for a script rather than a
// table for people.
func (f Format) Structured() bool { return f.Kind != KindTable && f.Kind != KindWide && f.Kind != "" }

// Write prints v in f's structured form. The JSON encoding is the one
// source of field names: YAML, jsonpath and templates see the same keys
// (the API's spelling), in the same order for YAML (sorted).
func (f Format) Write(w io.Writer, v any) error {
	switch f.Kind {
	case KindJSON, KindTable, KindWide, "":
		return JSON(w, v)
	}
	data, err := generic(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch f.Kind {
	case KindYAML:
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(data); err != nil {
			return err
		}
		_ = enc.Close()
	case KindJSONPath:
		if err := f.jp.Execute(&buf, data); err != nil {
			return fmt.Errorf("-o jsonpath: %v", err)
		}
	case KindTemplate:
		if err := f.tmpl.Execute(&buf, data); err != nil {
			return fmt.Errorf("-o go-template: %v", err)
		}
	}
	// A line of its own, so that a shell prompt does not follow it.
	if buf.Len() > 0 && !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
		buf.WriteByte('\n')
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// generic is v as encoding/json sees it: maps, slices and scalars keyed
// by the JSON names.
func generic(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // 64-bit IDs and counts print as they are
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return numbers(out), nil
}

// numbers turns json.Number into int64 or float64, which YAML and
// templates print as numbers, not strings.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	}
	return v
}
