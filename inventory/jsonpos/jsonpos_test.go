package jsonpos_test

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/jsonpos"
)

// decode is what every caller does (httpx.Decode, the webhooks' decoder,
// the catalog): goccy's Unmarshal, whose error jsonpos locates.
func decode(in string) error {
	var v any
	return json.Unmarshal([]byte(in), &v)
}

// Of puts a syntax error where a person looking at the input finds it:
// the byte (counted from 1, in bytes, not characters), its line and its
// column (in bytes from the line's start), or the end of an input that
// stops before its JSON does. Each figure is checked, and String too,
// which is what the API's 400 message and the catalog's error show.
func TestOfLocatesSyntaxErrors(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     jsonpos.Pos // Msg is checked against the error itself
		str      string
	}{
		{name: "first byte", in: `x`,
			want: jsonpos.Pos{Byte: 1, Line: 1, Column: 1}, str: "at byte 1 (line 1, column 1)"},
		{name: "first byte, a closing brace", in: `}`,
			want: jsonpos.Pos{Byte: 1, Line: 1, Column: 1}, str: "at byte 1 (line 1, column 1)"},
		{name: "first byte after blank lines", in: "\n\n}",
			want: jsonpos.Pos{Byte: 3, Line: 3, Column: 1}, str: "at byte 3 (line 3, column 1)"},
		{name: "middle: a trailing comma", in: `{"a":1,}`,
			want: jsonpos.Pos{Byte: 8, Line: 1, Column: 8}, str: "at byte 8 (line 1, column 8)"},
		{name: "middle: a broken literal", in: `{"a":tru}`,
			want: jsonpos.Pos{Byte: 9, Line: 1, Column: 9}, str: "at byte 9 (line 1, column 9)"},
		{name: "middle: a missing comma", in: `[1 2]`,
			want: jsonpos.Pos{Byte: 4, Line: 1, Column: 4}, str: "at byte 4 (line 1, column 4)"},
		{name: "last byte: data after the value", in: `{"a":1}}`,
			want: jsonpos.Pos{Byte: 8, Line: 1, Column: 8}, str: "at byte 8 (line 1, column 8)"},
		{name: "last byte after a space", in: `{"a":1} x`,
			want: jsonpos.Pos{Byte: 9, Line: 1, Column: 9}, str: "at byte 9 (line 1, column 9)"},
		{name: "multi-line: third line", in: "{\n  \"a\": 1,\n  \"b\": ?\n}",
			want: jsonpos.Pos{Byte: 20, Line: 3, Column: 8}, str: "at byte 20 (line 3, column 8)"},
		{name: "multi-line: first column of the last line", in: "[\n1,\n2,\n]",
			want: jsonpos.Pos{Byte: 9, Line: 4, Column: 1}, str: "at byte 9 (line 4, column 1)"},
		{name: "multi-line: after the value, tab and blank line before it", in: "\t{}\n\n  ]",
			want: jsonpos.Pos{Byte: 8, Line: 3, Column: 3}, str: "at byte 8 (line 3, column 3)"},
		// A raw newline inside a string is itself the bad byte: it is the
		// last byte of the line it ends.
		{name: "multi-line: a raw newline in a string", in: "{\"a\":\"x\ny\"}",
			want: jsonpos.Pos{Byte: 8, Line: 1, Column: 8}, str: "at byte 8 (line 1, column 8)"},
		// Windows line ends: \r\n is one line break, the \r the last byte
		// of the line before.
		{name: "multi-line: CRLF line ends", in: "{\"a\":1,\r\n\"b\":?}",
			want: jsonpos.Pos{Byte: 14, Line: 2, Column: 5}, str: "at byte 14 (line 2, column 5)"},
		{name: "multi-line: CRLF, first column of the last line", in: "{\r\n\"a\":1,\r\n}",
			want: jsonpos.Pos{Byte: 12, Line: 3, Column: 1}, str: "at byte 12 (line 3, column 1)"},
		// é, ü and ß are two bytes each: columns count bytes (x is the
		// 10th character, the 12th byte).
		{name: "multibyte before the error", in: `{"é":"ü",x}`,
			want: jsonpos.Pos{Byte: 12, Line: 1, Column: 12}, str: "at byte 12 (line 1, column 12)"},
		{name: "multibyte on two lines", in: "{\"é\":\"ü\"\n,\"ß\":x}",
			want: jsonpos.Pos{Byte: 18, Line: 2, Column: 7}, str: "at byte 18 (line 2, column 7)"},
		{name: "multibyte: the bad byte is the first of é", in: `{"a":é}`,
			want: jsonpos.Pos{Byte: 6, Line: 1, Column: 6}, str: "at byte 6 (line 1, column 6)"},
		{name: "multibyte at the start", in: `é`,
			want: jsonpos.Pos{Byte: 1, Line: 1, Column: 1}, str: "at byte 1 (line 1, column 1)"},
		{name: "multibyte, data after the value", in: `{"a":"é"}}`,
			want: jsonpos.Pos{Byte: 11, Line: 1, Column: 11}, str: "at byte 11 (line 1, column 11)"},
		// A byte order mark (an editor's, three bytes) is no JSON: the
		// first byte is named, not the character after the mark.
		{name: "multibyte: a UTF-8 byte order mark", in: "\ufeff{}",
			want: jsonpos.Pos{Byte: 1, Line: 1, Column: 1}, str: "at byte 1 (line 1, column 1)"},
		{name: "multibyte on the line before, error on the next", in: "{\"a\":1,\n\"é\":}",
			want: jsonpos.Pos{Byte: 14, Line: 2, Column: 6}, str: "at byte 14 (line 2, column 6)"},
		// An input that ends early: the error is after its last byte;
		// Line and Column name that last byte.
		{name: "end: an object cut after a value", in: `{"a":1`,
			want: jsonpos.Pos{Byte: 6, Line: 1, Column: 6, AtEnd: true}, str: "at the end of the body (after byte 6)"},
		{name: "end: an object cut after a colon, on its second line", in: "{\n\"a\":",
			want: jsonpos.Pos{Byte: 6, Line: 2, Column: 4, AtEnd: true}, str: "at the end of the body (after byte 6)"},
		{name: "end: an array cut short", in: `[1,2`,
			want: jsonpos.Pos{Byte: 4, Line: 1, Column: 4, AtEnd: true}, str: "at the end of the body (after byte 4)"},
		{name: "end: an unterminated string with multibyte", in: `"aé`,
			want: jsonpos.Pos{Byte: 4, Line: 1, Column: 4, AtEnd: true}, str: "at the end of the body (after byte 4)"},
		{name: "end: cut after a newline, multibyte before it", in: "[\"é\",\n\"ü\"\n",
			want: jsonpos.Pos{Byte: 12, Line: 2, Column: 5, AtEnd: true}, str: "at the end of the body (after byte 12)"},
		{name: "empty input", in: ``,
			want: jsonpos.Pos{Byte: 0, Line: 1, Column: 1, AtEnd: true}, str: "at the end of the body (after byte 0)"},
		{name: "blank input", in: " \n",
			want: jsonpos.Pos{Byte: 2, Line: 1, Column: 2, AtEnd: true}, str: "at the end of the body (after byte 2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := decode(c.in)
			if err == nil {
				t.Fatalf("%q decoded", c.in)
			}
			got, ok := jsonpos.Of([]byte(c.in), err)
			if !ok {
				t.Fatalf("%q: Of(%v) found no syntax error", c.in, err)
			}
			want := c.want
			want.Msg = err.Error()
			if got != want {
				t.Errorf("%q: Of = %+v, want %+v", c.in, got, want)
			}
			if s := got.String(); s != c.str {
				t.Errorf("%q: String = %q, want %q", c.in, s, c.str)
			}
		})
	}
}

// A syntax error wrapped by a caller is still found (errors.As).
func TestOfFindsAWrappedSyntaxError(t *testing.T) {
	in := []byte(`{"a":1,}`)
	err := fmt.Errorf("read the body: %w", decode(string(in)))
	got, ok := jsonpos.Of(in, err)
	if !ok || got.Byte != 8 || got.Line != 1 || got.Column != 8 || got.AtEnd {
		t.Fatalf("Of(wrapped) = %+v, %v; want byte 8, line 1, column 8", got, ok)
	}
}

// An error that is not goccy's syntax error is not located: Of answers
// false and the zero Pos, and the caller says what it knows instead. The
// standard library's own *json.SyntaxError is such a type too: the
// callers decode with goccy, and a position read from another decoder's
// error is not taken for one.
func TestOfLeavesOtherErrorsAlone(t *testing.T) {
	var typed struct{ A int }
	typeErr := json.Unmarshal([]byte(`{"A":"x"}`), &typed)
	var v any
	stdErr := stdjson.Unmarshal([]byte(`{"a":}`), &v)
	var stdSyntax *stdjson.SyntaxError
	if !errors.As(stdErr, &stdSyntax) {
		t.Fatalf("encoding/json gave %T, want its *SyntaxError", stdErr)
	}
	for name, err := range map[string]error{
		"a field of the wrong type":       typeErr,
		"encoding/json's SyntaxError":     stdErr,
		"a plain error":                   errors.New("unexpected EOF"),
		"a wrapped field type error":      fmt.Errorf("decode: %w", typeErr),
		"nil (the input decoded cleanly)": nil,
	} {
		t.Run(name, func(t *testing.T) {
			if got, ok := jsonpos.Of([]byte(`{"A":"x"}`), err); ok || got != (jsonpos.Pos{}) {
				t.Fatalf("Of(%v) = %+v, %v; want the zero Pos and false", err, got, ok)
			}
		})
	}
}
