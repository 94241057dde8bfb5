// Package lua embeds ticketd's Redis scripts. Each script changes one piece
// of state atomically; its header names KEYS, ARGV and the reply. The Go
// wrapper of a script sits next to the code that calls it and loads the
// script through Load.
package lua

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/redis/rueidis"
)

//go:embed *.lua
var files embed.FS

// Load returns the named script (file name without ".lua"), ready for
// EVALSHA with an EVAL fallback. It panics on a missing file: that is a
// build defect, not a runtime condition.
func Load(name string) *rueidis.Lua {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic("lua: no script " + name)
	}
	return rueidis.NewLuaScript(string(b))
}

// ErrReply means a script answered with a shape its wrapper does not expect.
var ErrReply = errors.New("lua: unexpected script reply")

// Array runs s and returns its reply as an array. Every script of ticketd
// answers with an array whose first element is an integer status.
func Array(ctx context.Context, c rueidis.Client, s *rueidis.Lua, keys, args []string) ([]rueidis.RedisMessage, error) {
	arr, err := s.Exec(ctx, c, keys, args).ToArray()
	if err != nil {
		return nil, err
	}
	if len(arr) == 0 {
		return nil, ErrReply
	}
	return arr, nil
}

// Int returns element i of a reply as an integer.
func Int(arr []rueidis.RedisMessage, i int) (int64, error) {
	if i >= len(arr) {
		return 0, fmt.Errorf("%w: no element %d", ErrReply, i)
	}
	v, err := arr[i].AsInt64()
	if err != nil {
		return 0, fmt.Errorf("%w: element %d: %v", ErrReply, i, err)
	}
	return v, nil
}

// Str returns element i of a reply as a string ("" for a nil element).
func Str(arr []rueidis.RedisMessage, i int) (string, error) {
	if i >= len(arr) {
		return "", fmt.Errorf("%w: no element %d", ErrReply, i)
	}
	if arr[i].IsNil() {
		return "", nil
	}
	v, err := arr[i].ToString()
	if err != nil {
		return "", fmt.Errorf("%w: element %d: %v", ErrReply, i, err)
	}
	return v, nil
}

// Strs returns element i of a reply as a list of strings.
func Strs(arr []rueidis.RedisMessage, i int) ([]string, error) {
	if i >= len(arr) {
		return nil, fmt.Errorf("%w: no element %d", ErrReply, i)
	}
	v, err := arr[i].AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("%w: element %d: %v", ErrReply, i, err)
	}
	return v, nil
}
