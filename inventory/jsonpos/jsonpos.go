// Package jsonpos says where a JSON syntax error is, as a client or an
// operator editing a file looks for it: the byte, and its line and column.
package jsonpos

import (
	"bytes"
	"errors"
	"fmt"

	json "github.com/goccy/go-json"
)

// Pos is where a syntax error is in the input, every figure counted from 1
// (columns in bytes). AtEnd is an input that ends before its JSON does:
// Byte is then its length, the error being after it.
type Pos struct {
	Byte, Line, Column int
	AtEnd              bool
	// Msg is the decoder's description ("invalid character '}' looking
	// for beginning of object key string").
	Msg string
}

// Of locates err, a decoder error of body; false when it is no syntax
// error (a field of the wrong type, say).
func Of(body []byte, err error) (Pos, bool) {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return Pos{}, false
	}
	p := Pos{Msg: se.Error(), AtEnd: se.Offset >= int64(len(body)) && bytes.Contains([]byte(se.Error()), []byte("end of JSON"))}
	if p.AtEnd {
		p.Byte = len(body)
	} else {
		// The decoder's offset counts the bytes read, the bad one included.
		p.Byte = int(min(max(se.Offset, 1), int64(len(body))))
	}
	before := body[:max(p.Byte-1, 0)]
	p.Line = 1 + bytes.Count(before, []byte{'\n'})
	p.Column = len(before) - bytes.LastIndexByte(before, '\n')
	return p, true
}

// String is "at byte 8 (line 1, column 8)", or for an input that ends
// early "at the end of the body (after byte 7)".
func (p Pos) String() string {
	if p.AtEnd {
		return fmt.Sprintf("at the end of the body (after byte %d)", p.Byte)
	}
	return fmt.Sprintf("at byte %d (line %d, column %d)", p.Byte, p.Line, p.Column)
}
