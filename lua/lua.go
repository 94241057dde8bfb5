// Package lua holds ticketd's Redis scripts, one per state change, and
// lib/, the definitions several scripts share; inventory/eval loads and
// runs them. Nothing else lives here, and it imports nothing of ticketd.
//
// A number a sale's script passes to a command goes as text made with
// string.format('%d', n): redis.call turns a Lua number into text with
// floating-point formatting (and .. does too), which cost Redis 7.0 about
// twice the instructions for a time in ms, 2,700 against 1,300
// (docs/decisions.md, One sale core). Only for integers: '%d' cuts a
// fraction off, and goes through a C long (64 bits on the servers Redis
// runs on here).
package lua

import "embed"

// Files are the scripts (<name>.lua) and lib/<name>.lua.
//
//go:embed *.lua lib/*.lua
var Files embed.FS
