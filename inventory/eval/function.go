package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"github.com/redis/rueidis"
)

// Script is one of package lua's scripts, from Load. Redis runs it as a
// function (FCALL) of a library of its own, loaded once per server: with
// EVALSHA, Redis ran a script's whole text on every call, making a closure
// of each library function it carries and collecting them again (about 5%
// of the Redis instructions of a partner sale, measured with callgrind); a
// library's definitions run once, when it loads.
type Script struct {
	name string // the file's name without ".lua"
	fn   string // the function's and its library's name (functionName)
	lib  string // the library, as FUNCTION LOAD takes it
	// the whole text, its SHA-1 and its runner, for a server without
	// functions (noFunctions)
	src, sha string
	lua      *rueidis.Lua
}

// Name is the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

// Function is the name FCALL calls the script by: its file name and the
// first 12 hex digits of its library's SHA-1, so that two builds of
// ticketd sharing a Redis (a rolling deploy) each call their own code, as
// EVALSHA's SHA-1 did.
func (s *Script) Function() string { return s.fn }

// Library returns the named script as a Redis Functions library (the text
// FUNCTION LOAD takes) and the name of the function it registers.
func Library(name string) (lib, fn string, err error) {
	src, err := Source(name)
	if err != nil {
		return "", "", err
	}
	fn = functionName(name, src)
	return string(library(fn, src)), fn, nil
}

func functionName(name string, src []byte) string {
	return name + "_" + shaOf(src)[:12]
}

// noWrites is a script's header line that declares it read-only: Redis
// then runs it where it refuses writes (a replica, a server out of memory
// or short of replicas, min-replicas-to-write) and fails any write it
// tries. A function without it is refused whole in those cases, before it
// runs.
const noWrites = "--@no-writes"

// constLine is a top-level constant a library may hold once for every
// call: a name set to a string or number literal.
var constLine = regexp.MustCompile(`^local [A-Za-z_][A-Za-z0-9_]* = ('[^'\\]*'|"[^"\\]*"|-?[0-9]+)\s*(--.*)?$`)

// library turns the expanded text src of a script into a library that
// registers it as the function fn. The script's leading part (its
// top-level functions, whole-line comments, blank lines and constants, up
// to its first other statement) is the library's own code, run once when
// the library loads; the rest is the function's body, run per call. The
// leading part runs nothing but definitions, so a call behaves as the
// whole script did: its functions reach KEYS and ARGV through two library
// locals that the function sets as it starts (Redis runs one call at a
// time), and a function defined after the first statement stays in the
// body, where it may use that statement's locals.
func library(fn string, src []byte) []byte {
	lines := bytes.SplitAfter(src, []byte("\n"))
	ends := map[int]int{} // a top-level function's first line -> its last
	if blocks, _, ok := functionBlocks(lines); ok {
		for _, b := range blocks {
			ends[b[0]] = b[1]
		}
	}
	flags := ""
	i := 0
	for i < len(lines) {
		if end, isFunc := ends[i]; isFunc {
			i = end + 1
			continue
		}
		l := bytes.TrimRight(lines[i], " \t\r\n")
		t := bytes.TrimLeft(l, " \t")
		if string(l) == noWrites {
			flags = ", flags = {'no-writes'}"
		}
		if len(t) == 0 || bytes.HasPrefix(t, []byte("--")) || constLine.Match(l) {
			i++
			continue
		}
		break
	}
	var out bytes.Buffer
	out.Grow(len(src) + 160)
	out.WriteString("#!lua name=" + fn + "\nlocal KEYS, ARGV\n")
	for _, l := range lines[:i] {
		out.Write(l)
	}
	out.WriteString("redis.register_function{function_name = '" + fn + "'" + flags +
		", callback = function(keys, args)\nKEYS, ARGV = keys, args\n")
	for _, l := range lines[i:] {
		out.Write(l)
	}
	if b := out.Bytes(); b[len(b)-1] != '\n' {
		out.WriteByte('\n')
	}
	out.WriteString("end}\n")
	return out.Bytes()
}

// IsNotLoaded reports whether err is a server's answer to a script call
// it did not run for want of the script: a function it does not have (a
// new or restarted server, or a new build's script), no functions at all
// (FCALL unknown), or a whole text it has not seen (NOSCRIPT, on a server
// without functions). The runners here load the script and call again; a
// caller that pipelined the call with other commands should know that
// what it read after it is from before it.
func IsNotLoaded(err error) bool {
	return isFunctionNotFound(err) || isUnknownFcall(err) || isNoScript(err)
}

func isFunctionNotFound(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(strings.TrimPrefix(re.Error(), "ERR "), "Function not found")
}

func isNoScript(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && re.IsNoScript()
}

// noFunctions holds the clients whose server has no functions: the
// embedded Redis of development (miniredis) knows EVAL but not FCALL.
// Their scripts run as whole texts with EVALSHA (EVAL when the server has
// not seen one), as before functions. A client is a key here, so it must
// be comparable: every rueidis client and every wrapper of one in ticketd
// is a pointer.
var noFunctions sync.Map

// isUnknownFcall reports whether err is a server's refusal of FCALL as an
// unknown command.
func isUnknownFcall(err error) bool {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(strings.TrimPrefix(re.Error(), "ERR "))
	return strings.HasPrefix(msg, "unknown command") && strings.Contains(msg, "fcall")
}

// functionless reports whether c's server has no functions, and learns it
// from err, the answer to a FCALL sent through c.
func functionless(c rueidis.Client, err error) bool {
	if isUnknownFcall(err) {
		noFunctions.Store(c, true)
		return true
	}
	_, no := noFunctions.Load(c)
	return no
}

// fcall is the command that runs s with keys and args: FCALL, or EVALSHA
// on a server without functions.
func fcall(c rueidis.Client, s *Script, keys, args []string) rueidis.Completed {
	if functionless(c, nil) {
		return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Fcall().Function(s.fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// loadOn loads s's library on the server behind d. REPLACE makes it
// idempotent: a library's name names its text, so one already there is
// the same code.
func loadOn(ctx context.Context, d rueidis.CoreClient, s *Script) error {
	return d.Do(ctx, d.B().FunctionLoad().Replace().FunctionCode(s.lib).Build()).Error()
}

// LoadInto loads s's library on every server c knows (each node of a
// Cluster): a call then finds it at once. The runners load a library when
// a server lacks it, so only a caller that counts round trips needs this.
// A replica refuses the load (it gets the library from its master), and
// so do other servers whose refusal does not matter; it is an error when
// no server took it.
func LoadInto(ctx context.Context, c rueidis.Client, s *Script) error {
	var errs []error
	took := false
	for _, n := range c.Nodes() {
		if err := loadOn(ctx, n, s); err != nil {
			errs = append(errs, err)
			continue
		}
		took = true
	}
	if took {
		return nil
	}
	return errors.Join(errs...)
}

// isReadOnly reports whether err is a replica's refusal of a write.
func isReadOnly(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "READONLY")
}

// all is every script of package lua, from Load.
var all = sync.OnceValue(func() []*Script {
	paths, _ := fs.Glob(files, "*.lua")
	out := make([]*Script, 0, len(paths))
	for _, p := range paths {
		out = append(out, Load(strings.TrimSuffix(p, ".lua")))
	}
	return out
})

// ourLibrary matches the name of a library of ticketd's: a script's name
// and 12 hex digits (functionName).
var ourLibrary = regexp.MustCompile(`^([a-z0-9_]+)_[0-9a-f]{12}$`)

// Install readies every server c knows for this build's scripts: it loads
// the libraries a server lacks and deletes those of ticketd's other
// builds. A library stays in Redis until it is deleted (about 20 KB of
// memory each), so without this every deploy would leave its 37 behind; a
// node still running an older build during a rolling deploy loads its own
// library again the first time it misses it (Array), once. Libraries not
// ticketd's are left alone. A server without functions (the embedded Redis
// of development) is left as it is, and so are replicas, which follow
// their master. The runners load a missing library themselves, so a
// failure here costs only a round trip later.
func Install(ctx context.Context, c rueidis.Client) error {
	scripts := map[string]bool{} // script names
	current := map[string]*Script{}
	for _, s := range all() {
		scripts[s.name], current[s.fn] = true, s
	}
	var errs []error
	for addr, n := range c.Nodes() {
		list, err := n.Do(ctx, n.B().FunctionList().Build()).ToArray()
		if functionless(c, err) {
			return nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		have := map[string]bool{}
		for _, l := range list {
			m, err := l.AsMap()
			if err != nil {
				continue
			}
			v := m["library_name"]
			name, _ := v.ToString()
			have[name] = true
			if sub := ourLibrary.FindStringSubmatch(name); sub != nil && scripts[sub[1]] && current[name] == nil {
				if err := n.Do(ctx, n.B().FunctionDelete().LibraryName(name).Build()).Error(); isReadOnly(err) {
					break // a replica
				} else if err != nil {
					errs = append(errs, fmt.Errorf("%s: delete %s: %w", addr, name, err))
				}
			}
		}
		for fn, s := range current {
			if have[fn] {
				continue
			}
			if err := loadOn(ctx, n, s); isReadOnly(err) {
				break // a replica
			} else if err != nil {
				errs = append(errs, fmt.Errorf("%s: load %s: %w", addr, s.name, err))
			}
		}
	}
	return errors.Join(errs...)
}
