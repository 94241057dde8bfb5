package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/jsonpos"
	"github.com/ticketd/ticketd/inventory/money"
)

// ValidationError is a refused catalog document: Path names the first bad
// field with the document's JSON names ("tenants[0].events[1].status"), ""
// for the document as a whole.
type ValidationError struct {
	Path string
	Msg  string
}

// Error returns "path: msg", or msg alone when the path is empty.
func (e *ValidationError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Decode reads a catalog document strictly: malformed JSON, data after the
// document, unknown fields, values of the wrong type and amounts with more
// than two decimals are refused as a *ValidationError naming where.
func Decode(body []byte) (*Document, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, &ValidationError{Msg: "the catalog document is empty"}
	}
	if !json.Valid(body) {
		return nil, syntaxError(body)
	}
	if trimmed[0] != '{' {
		return nil, &ValidationError{Msg: "the catalog document must be a JSON object"}
	}
	var doc Document
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		// goccy names no path for unknown fields or a failed UnmarshalJSON
		// (a bad amount), so walk the document again to find the spot.
		if ve := locate(body); ve != nil {
			return nil, ve
		}
		return nil, fallbackError(err)
	}
	return &doc, nil
}

// syntaxError describes malformed JSON (trailing data included) by line and
// column, which is what an operator editing a catalog file needs.
func syntaxError(body []byte) *ValidationError {
	var v any
	p, ok := jsonpos.Of(body, json.Unmarshal(body, &v))
	if !ok {
		return &ValidationError{Msg: "invalid JSON"}
	}
	if p.AtEnd { // where it broke is past the last byte, not at it
		line := 1 + bytes.Count(bytes.TrimRight(body, " \t\r\n"), []byte{'\n'}) // its last line with anything on it
		return &ValidationError{Msg: fmt.Sprintf("invalid JSON: the document ends at line %d before its value is complete: %s", line, p.Msg)}
	}
	return &ValidationError{Msg: fmt.Sprintf("invalid JSON at line %d, column %d: %s", p.Line, p.Column, p.Msg)}
}

// fallbackError keeps goccy's message when locate found nothing; a type
// error's dotted field ("tenants.0.name") is turned into a path.
func fallbackError(err error) *ValidationError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		parts := strings.Split(te.Field, ".")
		var b strings.Builder
		for _, p := range parts {
			if _, nerr := strconv.Atoi(p); nerr == nil {
				b.WriteString("[" + p + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
		return &ValidationError{Path: b.String(), Msg: "must be " + kindName(te.Type)}
	}
	return &ValidationError{Msg: strings.TrimPrefix(err.Error(), "json: ")}
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	centsType       = reflect.TypeFor[money.Cents]()
)

// walker reads a valid JSON document token by token alongside the Go type
// it should fit, in document order, so the first misfit is the one named.
type walker struct {
	dec    *json.Decoder
	fields map[reflect.Type]map[string]int
}

func locate(body []byte) *ValidationError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	w := walker{dec: dec, fields: map[reflect.Type]map[string]int{}}
	return w.value(reflect.TypeFor[Document](), "")
}

func (w *walker) token(path string) (json.Token, *ValidationError) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, &ValidationError{Path: path, Msg: "invalid JSON: " + err.Error()}
	}
	return tok, nil
}

// value reads the next value, which must fit t.
func (w *walker) value(t reflect.Type, path string) *ValidationError {
	tok, ve := w.token(path)
	if ve != nil {
		return ve
	}
	return w.fit(t, tok, path)
}

func (w *walker) fit(t reflect.Type, tok json.Token, path string) *ValidationError {
	if t.Kind() == reflect.Pointer {
		if tok == nil {
			return nil
		}
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return w.unmarshaler(t, tok, path)
	}
	if tok == nil {
		return nil // null leaves the zero value, as encoding/json does
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return w.misfit(t, tok, path)
		}
		return w.object(t, path)
	case reflect.Slice:
		if tok != json.Delim('[') {
			return w.misfit(t, tok, path)
		}
		for i := 0; w.dec.More(); i++ {
			if ve := w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ve != nil {
				return ve
			}
		}
		_, ve := w.token(path)
		return ve
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return w.misfit(t, tok, path)
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return w.misfit(t, tok, path)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return w.misfit(t, tok, path)
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return &ValidationError{Path: path, Msg: fmt.Sprintf("must be a whole number, got %s", n)}
		}
	default:
		return w.skip(tok, path)
	}
	return nil
}

// object reads the members of a JSON object into struct type t.
func (w *walker) object(t reflect.Type, path string) *ValidationError {
	names := w.fieldNames(t)
	for w.dec.More() {
		tok, ve := w.token(path)
		if ve != nil {
			return ve
		}
		key, _ := tok.(string)
		i, ok := names[key]
		if !ok {
			// encoding/json and goccy match names case-insensitively.
			for name, j := range names {
				if strings.EqualFold(name, key) {
					i, ok = j, true
					break
				}
			}
		}
		if !ok {
			return &ValidationError{Path: path, Msg: fmt.Sprintf("unknown field %q", key)}
		}
		if ve := w.value(t.Field(i).Type, join(path, jsonName(t.Field(i)))); ve != nil {
			return ve
		}
	}
	_, ve := w.token(path)
	return ve
}

func (w *walker) fieldNames(t reflect.Type) map[string]int {
	if m, ok := w.fields[t]; ok {
		return m
	}
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && jsonName(f) != "-" {
			m[jsonName(f)] = i
		}
	}
	w.fields[t] = m
	return m
}

// unmarshaler hands a scalar to the type's own UnmarshalJSON (amounts,
// percentages), rebuilding its raw JSON from the token.
func (w *walker) unmarshaler(t reflect.Type, tok json.Token, path string) *ValidationError {
	var raw []byte
	switch v := tok.(type) {
	case json.Number:
		raw = []byte(v)
	case string:
		raw, _ = json.Marshal(v)
	case bool:
		raw = strconv.AppendBool(nil, v)
	case nil:
		raw = []byte("null")
	default:
		return w.misfit(t, tok, path)
	}
	if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
		if t == centsType {
			return &ValidationError{Path: path, Msg: fmt.Sprintf("must be an amount: a non-negative number with at most two decimals, got %s", raw)}
		}
		return &ValidationError{Path: path, Msg: fmt.Sprintf("must be a number, got %s", raw)}
	}
	return nil
}

func (w *walker) misfit(t reflect.Type, tok json.Token, path string) *ValidationError {
	return &ValidationError{Path: path, Msg: fmt.Sprintf("must be %s, got %s", kindName(t), tokenKind(tok))}
}

// skip consumes the rest of a value of a type the walker does not check.
func (w *walker) skip(tok json.Token, path string) *ValidationError {
	depth := 0
	for {
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth <= 0 {
			return nil
		}
		var ve *ValidationError
		if tok, ve = w.token(path); ve != nil {
			return ve
		}
	}
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return "a number"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	}
	return "a " + t.Kind().String()
}

func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
