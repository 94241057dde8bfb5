// Package lua holds ticketd's Redis scripts, one per state change, and
// lib/, the definitions several scripts share; inventory/eval loads and
// runs them. Nothing else lives here, and it imports nothing of ticketd.
package lua

import "embed"

// Files are the scripts (<name>.lua) and lib/<name>.lua.
//
//go:embed *.lua lib/*.lua
var Files embed.FS
