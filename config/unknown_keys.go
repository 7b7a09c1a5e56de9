package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// A typo in settings.yaml ("runtme: fake") used to be kept silently among
// the unknown keys, and the broker ran its default runtime instead. The
// sections that are ours (server: and everything under it) are therefore
// checked against the keys the Go types read, and each unknown key is
// reported with the nearest known one.
//
// Top-level keys other than server: may belong to other tools sharing the
// file (they are kept on save), so only a near miss of a key we read
// ("sever:") is reported there.

// extraKeys are keys of a section that the section's type does not declare
// but reads from its Extra map, with the type they decode into.
var extraKeys = map[reflect.Type]map[string]reflect.Type{
	reflect.TypeFor[BrokerSettings](): {"kubernetes": reflect.TypeFor[KubernetesSettings]()},
}

// UnknownKeys returns one warning per key of our sections of the
// settings.yaml document doc that nothing reads, in document order, e.g.
// `server.broker.runtme (line 3): unknown key; did you mean runtime?`.
// A document that does not parse gives no warnings (loading it fails).
func UnknownKeys(doc []byte) []string {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil || len(root.Content) == 0 {
		return nil
	}
	var out []string
	walkKeys(root.Content[0], reflect.TypeFor[Settings](), "", &out)
	return out
}

// shapes are the types that keep their YAML undecoded (so that loading
// settings.yaml never fails on them), with the type their YAML decodes
// into later.
var shapes = map[reflect.Type]reflect.Type{
	reflect.TypeFor[InstanceList](): reflect.TypeFor[[]Instance](),
}

func walkKeys(n *yaml.Node, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := shapes[t]; ok {
		t = s
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type error, which decoding reports
		}
		known := knownKeys(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a merge key: its mapping's keys count
				walkKeys(v, t, path, out)
				continue
			}
			if ft, ok := known[k.Value]; ok {
				walkKeys(v, ft, join(path, k.Value), out)
				continue
			}
			near, d := nearest(k.Value, known)
			switch {
			case path == "" && d > 2:
				// Not ours and not a near miss of ours: another tool's key.
			case d <= maxTypo(k.Value):
				*out = append(*out, fmt.Sprintf("%s (line %d): unknown key; did you mean %s?", join(path, k.Value), k.Line, near))
			default:
				*out = append(*out, fmt.Sprintf("%s (line %d): unknown key; known keys here: %s", join(path, k.Value), k.Line, strings.Join(sortedKeys(known), ", ")))
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range n.Content {
			walkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		// A map of sections (a profile's clusters blocks) is checked
		// value by value; maps of scalars (profile settings, kubernetes
		// defaults) are free-form here, their consumers validate them.
		et := t.Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() != reflect.Struct || n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkKeys(n.Content[i+1], et, join(path, n.Content[i].Value), out)
		}
	}
}

// knownKeys are the yaml keys of struct type t (inline fields hold the
// unknown ones and add none), plus its extraKeys.
func knownKeys(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || strings.Contains(opts, "inline") {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	for k, ft := range extraKeys[t] {
		m[k] = ft
	}
	return m
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]reflect.Type) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// maxTypo is how far (in edits) a key may be from a known one to be taken
// for a typo of it: one edit for short keys, about a third of the key for
// longer ones.
func maxTypo(key string) int { return max(1, len(key)/3) }

// nearest is the known key closest to key by edit distance (ties: the
// first in sorted order) and its distance.
func nearest(key string, known map[string]reflect.Type) (string, int) {
	best, bestD := "", int(^uint(0)>>1)
	for _, k := range sortedKeys(known) {
		if d := levenshtein(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best, bestD
}

// levenshtein is the edit distance (insertions, deletions, substitutions)
// between a and b, by byte: keys are ASCII.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
