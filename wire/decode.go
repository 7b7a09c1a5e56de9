package wire

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
)

// decodeFrame parses one frame. It is a hand-written, single-pass parser:
// encoding/json validates the whole input before decoding it and then
// copies Body in a third pass, which made frame decoding the largest CPU
// cost of a round trip. The parser is exactly as strict as JSON (unknown
// fields are validated, not just skipped) and falls back to encoding/json
// for the rare tokens that need it (escaped strings, the error object).
//
// Allocation is proportional to len(data): nothing in a frame makes the
// decoder reserve space up front, and nesting depth is bounded.
func decodeFrame(data []byte) (*Frame, error) {
	d := decoder{b: data}
	f := new(Frame)
	err := d.frame(f)
	if err == nil {
		if d.ws(); d.i != len(d.b) {
			err = errors.New("data after the frame")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("wire: bad frame at byte %d: %w", d.i, err)
	}
	return f, nil
}

// decodeFramesInto calls fn with each frame of a message: one frame, or
// several separated by whitespace (the writer batches queued frames into
// one message, joined by newlines), decoding every frame into f, which fn
// must therefore not retain. names, if not nil, interns method names: a
// name it knows costs no allocation.
func decodeFramesInto(data []byte, f *Frame, names registry, fn func(*Frame) error) error {
	d := decoder{b: data, names: names}
	for {
		*f = Frame{}
		if err := d.frame(f); err != nil {
			return fmt.Errorf("wire: bad frame at byte %d: %w", d.i, err)
		}
		if err := fn(f); err != nil {
			return err
		}
		if d.ws(); d.i == len(d.b) {
			return nil
		}
	}
}

var errNoKind = errors.New("frame without kind")

// maxDepth bounds nesting in a skipped value (encoding/json allows 10000;
// control-plane bodies are shallow).
const maxDepth = 1000

type decoder struct {
	b     []byte
	i     int
	names registry // known method names, to intern
}

var (
	errSyntax = errors.New("invalid JSON")
	errDepth  = errors.New("JSON nested too deeply")
)

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// frame parses one frame object at d.i into f, which must be zero.
func (d *decoder) frame(f *Frame) error {
	d.ws()
	if !d.eat('{') {
		return errSyntax
	}
	d.ws()
	if d.eat('}') {
		return errNoKind
	}
	for {
		d.ws()
		key, err := d.key()
		if err != nil {
			return err
		}
		d.ws()
		if !d.eat(':') {
			return errSyntax
		}
		d.ws()
		if err := d.field(f, key); err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		if !d.eat('}') {
			return errSyntax
		}
		if f.Kind == "" {
			return errNoKind
		}
		return nil
	}
}

// The keys of a frame, as constants so that the common ones cost no
// allocation when decoded.
var frameKeys = [...]string{"k", "id", "m", "dl", "key", "st", "cr", "err", "of", "ofid", "tot", "off", "more", "d", "b"}

// key decodes an object key; the frame's own keys are not allocated.
func (d *decoder) key() (string, error) {
	s, ok, err := d.plainString()
	if err != nil {
		return "", err
	}
	if !ok {
		var v string
		err = d.viaJSON(&v)
		return v, err
	}
	for _, k := range frameKeys {
		if string(s) == k {
			return k, nil
		}
	}
	return string(s), nil
}

var kinds = [...]Kind{KindRequest, KindResponse, KindCancel, KindItem, KindEnd, KindChunk, KindCredit}

// kind decodes a kind; the known ones are not allocated.
func (d *decoder) kind() (Kind, error) {
	s, ok, err := d.plainString()
	if err != nil {
		return "", err
	}
	if ok {
		for _, k := range kinds {
			if string(s) == string(k) {
				return k, nil
			}
		}
		return Kind(s), nil
	}
	var v string
	err = d.viaJSON(&v)
	return Kind(v), err
}

// method decodes a method name, interned if it is one of d.names.
func (d *decoder) method() (string, error) {
	s, ok, err := d.plainString()
	if err != nil {
		return "", err
	}
	if ok {
		if m := d.names[string(s)]; m != nil {
			return m.name, nil
		}
		return string(s), nil
	}
	var v string
	err = d.viaJSON(&v)
	return v, err
}

// field decodes the value of one key. As with encoding/json, null leaves
// a field as it is.
func (d *decoder) field(f *Frame, key string) error {
	if key != "b" && d.lit("null") {
		return nil
	}
	var err error
	switch key {
	case "k":
		f.Kind, err = d.kind()
	case "id":
		f.ID, err = d.uint()
	case "m":
		f.Method, err = d.method()
	case "dl":
		f.Deadline, err = d.int()
	case "key":
		f.Key, err = d.str()
	case "st":
		f.Stream, err = d.bool()
	case "cr":
		f.Credit, err = d.int()
	case "err":
		start := d.i
		if err = d.skip(0); err == nil {
			var pe peerError
			if err = json.Unmarshal(d.b[start:d.i], &pe); err == nil {
				f.Error = pe.apiError()
			}
		}
	case "of":
		f.Of, err = d.kind()
	case "ofid":
		f.OfID, err = d.uint()
	case "tot":
		f.Total, err = d.int()
	case "off":
		f.Off, err = d.int()
	case "more":
		f.More, err = d.bool()
	case "d":
		f.Data, err = d.bytes()
	case "b":
		start := d.i
		if err = d.skip(0); err == nil {
			f.Body = append(json.RawMessage(nil), d.b[start:d.i]...)
		}
	default:
		err = d.skip(0) // a newer peer's field: ignored, but must be valid
	}
	return err
}

// plainString scans a string at d.i. It returns its contents when they
// need no unescaping (printable ASCII without backslash), or ok=false with
// d.i unchanged when they do.
func (d *decoder) plainString() (s []byte, ok bool, err error) {
	if !d.eat('"') {
		return nil, false, errSyntax
	}
	start := d.i
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return d.b[start:j], true, nil
		}
		if c < 0x20 || c >= 0x80 || c == '\\' {
			d.i = start - 1
			return nil, false, nil
		}
	}
	return nil, false, errSyntax
}

func (d *decoder) str() (string, error) {
	s, ok, err := d.plainString()
	if err != nil {
		return "", err
	}
	if ok {
		return string(s), nil
	}
	var v string
	err = d.viaJSON(&v)
	return v, err
}

func (d *decoder) bytes() ([]byte, error) {
	s, ok, err := d.plainString()
	if err != nil {
		return nil, err
	}
	if ok { // what encoding/json does for []byte, without unquoting
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, s)
		return b[:n], err
	}
	var v []byte
	err = d.viaJSON(&v)
	return v, err
}

// viaJSON decodes the value at d.i with encoding/json.
func (d *decoder) viaJSON(v any) error {
	start := d.i
	if err := d.skip(0); err != nil {
		return err
	}
	return json.Unmarshal(d.b[start:d.i], v)
}

// number scans a JSON number and reports whether it is an integer.
func (d *decoder) number() (tok []byte, integer bool, err error) {
	start := d.i
	d.eat('-')
	switch {
	case d.eat('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false, errSyntax
	}
	integer = true
	if d.eat('.') {
		integer = false
		if d.digits() == 0 {
			return nil, false, errSyntax
		}
	}
	if d.eat('e') || d.eat('E') {
		integer = false
		if !d.eat('+') {
			d.eat('-')
		}
		if d.digits() == 0 {
			return nil, false, errSyntax
		}
	}
	return d.b[start:d.i], integer, nil
}

func (d *decoder) digits() int {
	n := 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

func (d *decoder) uint() (uint64, error) {
	tok, integer, err := d.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		return 0, fmt.Errorf("number %s is not an unsigned integer", tok)
	}
	return strconv.ParseUint(string(tok), 10, 64)
}

func (d *decoder) int() (int64, error) {
	tok, integer, err := d.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		return 0, fmt.Errorf("number %s is not an integer", tok)
	}
	return strconv.ParseInt(string(tok), 10, 64)
}

func (d *decoder) bool() (bool, error) {
	switch {
	case d.lit("true"):
		return true, nil
	case d.lit("false"):
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// skip validates and skips one JSON value.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	if d.i >= len(d.b) {
		return errSyntax
	}
	switch c := d.b[d.i]; {
	case c == '"':
		return d.skipString()
	case c == '{':
		return d.skipContainer(depth, '}', true)
	case c == '[':
		return d.skipContainer(depth, ']', false)
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := d.number()
		return err
	case d.lit("true"), d.lit("false"), d.lit("null"):
		return nil
	}
	return errSyntax
}

func (d *decoder) skipContainer(depth int, end byte, object bool) error {
	d.i++
	d.ws()
	if d.eat(end) {
		return nil
	}
	for {
		d.ws()
		if object {
			if err := d.skipString(); err != nil {
				return err
			}
			d.ws()
			if !d.eat(':') {
				return errSyntax
			}
			d.ws()
		}
		if err := d.skip(depth + 1); err != nil {
			return err
		}
		d.ws()
		if d.eat(end) {
			return nil
		}
		if !d.eat(',') {
			return errSyntax
		}
	}
}

// skipString skips a string, checking escapes and rejecting control
// characters as JSON does. Invalid UTF-8 is allowed, as encoding/json
// allows it (replacing it when decoding).
func (d *decoder) skipString() error {
	if !d.eat('"') {
		return errSyntax
	}
	for d.i < len(d.b) {
		d.i += plainRun(d.b[d.i:])
		if d.i >= len(d.b) {
			break
		}
		c := d.b[d.i]
		d.i++
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return errSyntax
		case c == '\\':
			if d.i >= len(d.b) {
				return errSyntax
			}
			e := d.b[d.i]
			d.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(d.b)-d.i < 4 {
					return errSyntax
				}
				for _, h := range d.b[d.i : d.i+4] {
					if !isHex(h) {
						return errSyntax
					}
				}
				d.i += 4
			default:
				return errSyntax
			}
		}
	}
	return errSyntax
}

// plainRun is how many bytes at the start of b need no attention inside a
// string: not a quote, backslash or control character. It looks at eight
// bytes at a time (bodies are mostly long strings, e.g. base64).
func plainRun(b []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	n := 0
	for ; len(b)-n >= 8; n += 8 {
		x := binary.LittleEndian.Uint64(b[n:])
		// A byte of z is nonzero (its high bit set) where x has a byte
		// equal to '"' or '\\', or below 0x20. Borrows only make bytes
		// after the first such one nonzero too, which does not matter.
		q := x ^ (ones * '"')
		s := x ^ (ones * '\\')
		z := ((q - ones) &^ q) | ((s - ones) &^ s) | ((x - ones*0x20) &^ x)
		if z&highs != 0 {
			return n + bits.TrailingZeros64(z&highs)/8
		}
	}
	for ; n < len(b); n++ {
		if c := b[n]; c < 0x20 || c == '"' || c == '\\' {
			return n
		}
	}
	return n
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
