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
	fn   string // the function's and its library's name (named)
	lib  string // the library, as FUNCTION LOAD takes it
	// the whole text, its SHA-1 and its runner, for a server without
	// functions (noFunctions)
	src, sha string
	lua      *rueidis.Lua
}

// Name is the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

// Function is the name FCALL calls the script by: its file name and 12 hex
// digits of its library's SHA-1 (named), so that two builds of ticketd
// sharing a Redis (a rolling deploy) each call their own code, as
// EVALSHA's SHA-1 did.
func (s *Script) Function() string { return s.fn }

// Library returns the named script as a Redis Functions library (the text
// FUNCTION LOAD takes) and the name of the function it registers.
func Library(name string) (lib, fn string, err error) {
	src, err := Source(name)
	if err != nil {
		return "", "", err
	}
	b, fn, err := named(name, src)
	return string(b), fn, err
}

// named is the library of the script name, whose expanded text is src,
// and its function's name: the script's name and the first 12 hex digits
// of the SHA-1 of the library made under a fixed name, so that a change
// to the script or to how library makes a library renames it.
func named(name string, src []byte) (lib []byte, fn string, err error) {
	plain, err := library(name, src)
	if err != nil {
		return nil, "", err
	}
	fn = name + "_" + shaOf(plain)[:12]
	lib, err = library(fn, src)
	return lib, fn, err
}

// A script's header may carry a flag line for Redis. Without one, Redis
// refuses a function that may write whole, before it runs, where it
// refuses writes: out of memory (noeviction), or short of replicas
// (min-replicas-to-write).
const (
	// noWrites declares the script read-only: Redis runs it there, and on
	// a replica, and fails any write it tries.
	noWrites = "--@no-writes"
	// allowOOM declares that the script frees memory before it may use
	// any (its first write deletes, expires or acknowledges): Redis runs
	// it out of memory, as it ran such a script before functions, so a
	// full Redis still acknowledges synced sales and lets holds lapse.
	allowOOM = "--@allow-oom"
)

// flagLines are the flag lines and the flag each gives.
var flagLines = map[string]string{noWrites: "no-writes", allowOOM: "allow-oom"}

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
// body, where it may use that statement's locals. A flag line (flagLines)
// after the first statement is an error: Redis would never see it.
func library(fn string, src []byte) ([]byte, error) {
	lines := bytes.SplitAfter(src, []byte("\n"))
	ends := map[int]int{} // a top-level function's first line -> its last
	if blocks, _, ok := functionBlocks(lines); ok {
		for _, b := range blocks {
			ends[b[0]] = b[1]
		}
	}
	var flags []string
	i := 0
	for i < len(lines) {
		if end, isFunc := ends[i]; isFunc {
			i = end + 1
			continue
		}
		l := bytes.TrimRight(lines[i], " \t\r\n")
		t := bytes.TrimLeft(l, " \t")
		if f, ok := flagLines[string(l)]; ok {
			flags = append(flags, "'"+f+"'")
		}
		if len(t) == 0 || bytes.HasPrefix(t, []byte("--")) || constLine.Match(l) {
			i++
			continue
		}
		break
	}
	for n, l := range lines[i:] {
		if _, ok := flagLines[string(bytes.TrimSpace(l))]; ok {
			return nil, fmt.Errorf("lua: %s, line %d of its expanded text: %s after the script's first statement", fn, i+n+1, bytes.TrimSpace(l))
		}
	}
	flagArg := ""
	if len(flags) > 0 {
		flagArg = ", flags = {" + strings.Join(flags, ", ") + "}"
	}
	var out bytes.Buffer
	out.Grow(len(src) + 160)
	out.WriteString("#!lua name=" + fn + "\nlocal KEYS, ARGV\n")
	for _, l := range lines[:i] {
		out.Write(l)
	}
	out.WriteString("redis.register_function{function_name = '" + fn + "'" + flagArg +
		", callback = function(keys, args)\nKEYS, ARGV = keys, args\n")
	for _, l := range lines[i:] {
		out.Write(l)
	}
	if b := out.Bytes(); b[len(b)-1] != '\n' {
		out.WriteByte('\n')
	}
	out.WriteString("end}\n")
	return out.Bytes(), nil
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

// redisMessage is Redis' error message in err without its "ERR " prefix,
// or "" when err is not an error Redis answered.
func redisMessage(err error) string {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return ""
	}
	return strings.TrimPrefix(re.Error(), "ERR ")
}

func isFunctionNotFound(err error) bool {
	return strings.HasPrefix(redisMessage(err), "Function not found")
}

func isNoScript(err error) bool { return strings.HasPrefix(redisMessage(err), "NOSCRIPT") }

// isReadOnly reports whether err is a replica's refusal of a write.
func isReadOnly(err error) bool { return strings.HasPrefix(redisMessage(err), "READONLY") }

// noFunctions holds the clients whose server has no functions: the
// embedded Redis of development (miniredis) knows EVAL but not FCALL.
// Their scripts run as whole texts with EVALSHA (EVAL when the server has
// not seen one), as before functions. A client is a key here, so it must
// be comparable: every rueidis client and every wrapper of one in ticketd
// is a pointer.
var noFunctions sync.Map

// isUnknownFcall reports whether err is a server's refusal of FCALL (or
// FUNCTION) as an unknown command: a server without functions.
func isUnknownFcall(err error) bool {
	cmd, ok := strings.CutPrefix(strings.ToLower(redisMessage(err)), "unknown command ")
	cmd = strings.TrimLeft(cmd, "`'\"") // Redis 7 quotes it with backticks, earlier ones with '
	return ok && (strings.HasPrefix(cmd, "fcall") || strings.HasPrefix(cmd, "function"))
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
// Cluster): a call then finds it at once. A replica refuses the load (it
// gets the library from its master) and that is no error; any other
// refusal is (a server out of memory refuses FUNCTION LOAD), though other
// servers may have taken the library.
func LoadInto(ctx context.Context, c rueidis.Client, s *Script) error {
	var errs []error
	for addr, n := range c.Nodes() {
		if err := loadOn(ctx, n, s); err != nil && !isReadOnly(err) {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		}
	}
	return errors.Join(errs...)
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

// Install loads, on every server c knows (each master of a Cluster;
// replicas follow their master), the libraries of this build's scripts
// that the server lacks, so that no sale waits for a load. The runners
// load a missing library themselves, so a failure here costs only a round
// trip later. A server without functions (the embedded Redis of
// development) is left as it is. Libraries of other builds are left too:
// a node of another build may be running (a rolling deploy, a rollback),
// and each build's 36 libraries take about 0.7 MB (docs/decisions.md,
// Scripts as Redis functions, says how to drop them).
func Install(ctx context.Context, c rueidis.Client) error {
	var errs []error
	for addr, n := range c.Nodes() {
		have, err := Libraries(ctx, n)
		if functionless(c, err) {
			return nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		for _, s := range all() {
			if have[s.fn] {
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

// Libraries returns the names of the libraries the server behind c holds
// (FUNCTION LIST).
func Libraries(ctx context.Context, c rueidis.CoreClient) (map[string]bool, error) {
	list, err := c.Do(ctx, c.B().FunctionList().Build()).ToArray()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, l := range list {
		m, err := l.AsMap()
		if err != nil {
			return nil, fmt.Errorf("FUNCTION LIST: %w", err)
		}
		v := m["library_name"]
		name, err := v.ToString()
		if err != nil {
			return nil, fmt.Errorf("FUNCTION LIST: library_name: %w", err)
		}
		names[name] = true
	}
	return names, nil
}
