// Package eval runs ticketd's Redis scripts (package lua holds them): it
// loads a script as a Redis function, checks that its keys share one
// slot, runs it with FCALL (alone, pipelined, or followed by WAIT) and
// reads its reply.
// Each script changes one piece of state atomically; its header names
// KEYS, ARGV and the reply. The Go wrapper of a script sits next to the
// code that calls it and loads the script through Load.
//
// Scripts cannot call each other, so a definition several scripts need
// lives once in lib/<name>.lua, and a script takes it with a line
// "--@include <name>" (a Lua comment, so the file stays valid Lua): Load
// puts the library's text in that line's place. A library may include
// another; each library is put into a script once, where it is first
// included, so a library that includes what it uses never depends on the
// order of a script's includes. What Redis runs is the expanded text, as
// a library (function.go).
//
// One library is constants, not code: lib/reply.lua's table R of reply
// codes. A script that includes it gets each R.<NAME> of its code as the
// table's number, and not the table: building it on every run cost about
// 2 us of Redis CPU a script call, for names that never change. A name
// the table lacks is an error, as a missing library is.
package eval

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/lua"
)

// files are the scripts.
var files = lua.Files

var includePrefix = []byte("--@include ")

// Source returns the text Redis runs for the named script: the file with
// every "--@include <name>" line replaced by lib/<name>.lua, expanded the
// same way, each library once. A line that looks like a directive ("--@…"
// after any indentation) but is not an include Source expands (indented,
// misspelt, an unknown library) is an error, as is an include cycle: a
// script that silently lacked its library would fail in Redis at run time.
//
// Functions the script never reaches are left out (shake): a library
// loads faster and holds less without them.
func Source(name string) ([]byte, error) { return expand(files, name) }

func expand(fsys fs.FS, name string) ([]byte, error) {
	b, err := fs.ReadFile(fsys, name+".lua")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	done := map[string]bool{}
	if err := include(fsys, name, b, &out, done, nil); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(name, "lib/") { // a library alone is kept whole (its tests run it)
		shaken := shake(out.Bytes())
		out.Reset()
		out.Write(shaken)
	}
	if !done[replyLib] {
		return out.Bytes(), nil
	}
	lib, err := fs.ReadFile(fsys, "lib/"+replyLib+".lua")
	if err != nil {
		return nil, err
	}
	codes, err := parseReplyCodes(lib)
	if err != nil {
		return nil, err
	}
	return replyNumbers(name, out.Bytes(), codes)
}

// A top-level function of a script or library starts at a line
// "local function <name>(" and ends at the next line "end", both at the
// start of the line, its body indented (or a whole one-line function);
// lua.Files' layout, which TestEveryFileHasTheLayoutShakeReads holds
// every file to.
var (
	topFunc = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	oneLine = regexp.MustCompile(`\bend\s*$`)
	ident   = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// functionBlocks finds the top-level functions of lines: name -> its
// first and last line, in order. ok is false when a function does not
// have the layout above (no closing "end", or a body line at the start of
// a line): then nothing may be left out.
func functionBlocks(lines [][]byte) (blocks map[string][2]int, order []string, ok bool) {
	blocks = map[string][2]int{}
	for i := 0; i < len(lines); i++ {
		m := topFunc.FindSubmatch(lines[i])
		if m == nil {
			continue
		}
		end := i
		if !oneLine.Match(lines[i]) {
			for end = i + 1; end < len(lines) && string(bytes.TrimRight(lines[end], " \t\r\n")) != "end"; end++ {
				if l := lines[end]; len(l) > 0 && l[0] != ' ' && l[0] != '\t' && l[0] != '\n' && l[0] != '\r' {
					return nil, nil, false
				}
			}
			if end == len(lines) {
				return nil, nil, false
			}
		}
		if _, twice := blocks[string(m[1])]; twice {
			return nil, nil, false
		}
		blocks[string(m[1])] = [2]int{i, end}
		order = append(order, string(m[1]))
		i = end
	}
	return blocks, order, true
}

// shake leaves out of an expanded script the top-level functions that
// nothing it runs names: a function is kept when its name is in the
// script's code outside the functions, or in a kept function's. Only
// whole-line comments are skipped when reading names, so a name in a
// trailing comment or a string keeps its function (too much kept costs a
// closure; too little would fail in Redis).
func shake(src []byte) []byte {
	lines := bytes.SplitAfter(src, []byte("\n"))
	blocks, order, ok := functionBlocks(lines)
	if !ok { // not the layout shake reads: keep it all
		return src
	}
	in := make([]bool, len(lines)) // the line is a function's
	for _, b := range blocks {
		for i := b[0]; i <= b[1]; i++ {
			in[i] = true
		}
	}
	names := func(into map[string]bool, line []byte) {
		if t := bytes.TrimLeft(line, " \t"); bytes.HasPrefix(t, []byte("--")) {
			return
		}
		for _, w := range ident.FindAll(line, -1) {
			into[string(w)] = true
		}
	}
	rest := map[string]bool{} // names in the code outside the functions
	for i, l := range lines {
		if !in[i] {
			names(rest, l)
		}
	}
	kept := map[string]bool{}
	var visit func(refs map[string]bool)
	visit = func(refs map[string]bool) {
		for name := range refs {
			b, ok := blocks[name]
			if !ok || kept[name] {
				continue
			}
			kept[name] = true
			inner := map[string]bool{}
			for _, l := range lines[b[0] : b[1]+1] {
				names(inner, l)
			}
			delete(inner, name) // its own name on its first line is not a call
			visit(inner)
		}
	}
	visit(rest)
	if len(kept) == len(order) {
		return src
	}
	drop := make([]bool, len(lines))
	for _, name := range order {
		if !kept[name] {
			for i := blocks[name][0]; i <= blocks[name][1]; i++ {
				drop[i] = true
			}
		}
	}
	var out bytes.Buffer
	out.Grow(len(src))
	for i, l := range lines {
		if !drop[i] {
			out.Write(l)
		}
	}
	return out.Bytes()
}

// replyLib is the library of reply codes, put into a script as numbers.
const replyLib = "reply"

// include writes text (of the file name) to out with its include lines
// expanded. done holds the libraries already in out (replyLib's only
// marked: expand puts its numbers in); open those being expanded (a
// cycle).
func include(fsys fs.FS, name string, text []byte, out *bytes.Buffer, done map[string]bool, open []string) error {
	for n, line := range bytes.SplitAfter(text, []byte("\n")) {
		lib, ok, err := directive(line)
		if err != nil {
			return fmt.Errorf("lua: %s.lua line %d: %w", name, n+1, err)
		}
		if _, flag := flagLines[string(bytes.TrimSpace(line))]; flag && strings.HasPrefix(name, "lib/") {
			return fmt.Errorf("lua: %s.lua line %d: a flag line belongs in a script's header, not a library", name, n+1)
		}
		if !ok {
			out.Write(line)
			continue
		}
		if slices.Contains(open, lib) {
			return fmt.Errorf("lua: %s.lua line %d: include cycle %s -> %s", name, n+1, strings.Join(open, " -> "), lib)
		}
		if done[lib] {
			continue
		}
		b, err := fs.ReadFile(fsys, "lib/"+lib+".lua")
		if err != nil {
			return fmt.Errorf("lua: %s.lua line %d includes %s: %w", name, n+1, lib, err)
		}
		if lib == replyLib {
			done[lib] = true
			continue
		}
		if err := include(fsys, "lib/"+lib, b, out, done, append(open, lib)); err != nil {
			return err
		}
		done[lib] = true
		if len(b) > 0 && b[len(b)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	return nil
}

// directive reads an include line: ok with the library's name for
// "--@include <name>" at the start of a line, an error for any other line
// whose comment starts with "@" (a directive Source would not expand)
// but a flag line (flagLines, function.go).
func directive(line []byte) (lib string, ok bool, err error) {
	l := bytes.TrimRight(line, " \t\r\n")
	t := bytes.TrimLeft(l, " \t")
	if !bytes.HasPrefix(t, []byte("--")) || !bytes.HasPrefix(bytes.TrimLeft(t[2:], " \t"), []byte("@")) {
		return "", false, nil
	}
	if _, flag := flagLines[string(l)]; flag {
		return "", false, nil // library reads it
	}
	name, found := bytes.CutPrefix(l, includePrefix)
	if !found || !libName.Match(name) {
		return "", false, fmt.Errorf("%q is not an include: want \"--@include <name>\" at the start of the line, <name> of a-z 0-9 _", l)
	}
	return string(name), true, nil
}

var libName = regexp.MustCompile(`^[a-z0-9_]+$`)

// ReplyCodes returns the table of lib/reply.lua: a code's name -> its
// number.
func ReplyCodes() (map[string]int64, error) {
	b, err := fs.ReadFile(files, "lib/"+replyLib+".lua")
	if err != nil {
		return nil, err
	}
	return parseReplyCodes(b)
}

// parseReplyCodes reads lib/reply.lua's table "local R = {", one
// "NAME = number," a line (a comment after it), "}". Anything else in it,
// a name twice or a number twice is an error: one meaning, one code.
func parseReplyCodes(lib []byte) (map[string]int64, error) {
	_, body, ok := strings.Cut(string(lib), "\nlocal R = {\n")
	if ok {
		body, _, ok = strings.Cut(body, "\n}")
	}
	if !ok {
		return nil, errors.New("lua: lib/reply.lua has no table \"local R = {\" ... \"}\"")
	}
	codes, names := map[string]int64{}, map[int64]string{}
	for _, line := range strings.Split(body, "\n") {
		line, _, _ = strings.Cut(line, "--")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		m := replyEntry.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("lua: lib/reply.lua: %q is not an entry \"NAME = number,\"", line)
		}
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("lua: lib/reply.lua: %s: %w", m[1], err)
		}
		if _, dup := codes[m[1]]; dup {
			return nil, fmt.Errorf("lua: lib/reply.lua: %s twice", m[1])
		}
		if other, dup := names[n]; dup {
			return nil, fmt.Errorf("lua: lib/reply.lua: %s and %s are both %d", other, m[1], n)
		}
		codes[m[1]], names[n] = n, m[1]
	}
	if len(codes) == 0 {
		return nil, errors.New("lua: lib/reply.lua defines no code")
	}
	return codes, nil
}

var (
	replyEntry = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)\s*=\s*(\d+),?$`)
	replyName  = regexp.MustCompile(`\bR\.([A-Za-z_][A-Za-z0-9_]*)`)
)

// replyNumbers puts each R.<NAME> of the code in src (not its comments:
// the headers keep the names) as its number in codes.
func replyNumbers(name string, src []byte, codes map[string]int64) ([]byte, error) {
	lines := bytes.SplitAfter(src, []byte("\n"))
	var out bytes.Buffer
	out.Grow(len(src))
	for n, line := range lines {
		code, comment := line, []byte(nil)
		if i := bytes.Index(line, []byte("--")); i >= 0 {
			code, comment = line[:i], line[i:]
		}
		var bad string
		code = replyName.ReplaceAllFunc(code, func(ref []byte) []byte {
			c, ok := codes[string(ref[2:])]
			if !ok {
				bad = string(ref)
				return ref
			}
			return strconv.AppendInt(nil, c, 10)
		})
		if bad != "" {
			return nil, fmt.Errorf("lua: %s.lua, line %d of its expanded text: %s is not in lib/reply.lua", name, n+1, bad)
		}
		out.Write(code)
		out.Write(comment)
	}
	return out.Bytes(), nil
}

// Load returns the named script (file name without ".lua", includes
// expanded), ready to run as a function (FCALL), its library loaded on a
// server the first time the server lacks it. It panics on a missing file
// or library: that is a build defect, not a runtime condition.
func Load(name string) *Script {
	src, err := Source(name)
	if err != nil {
		panic("lua: script " + name + ": " + err.Error())
	}
	lib, fn, err := named(name, src)
	if err != nil {
		panic("lua: script " + name + ": " + err.Error())
	}
	return &Script{name: name, fn: fn, lib: string(lib), src: string(src), sha: shaOf(src), lua: rueidis.NewLuaScript(string(src))}
}

// shaOf is the SHA-1 of the text b, in hex.
func shaOf(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Names maps the function name of each script of package lua, as FCALL
// names it, to the script's name: what a command log (MONITOR, SLOWLOG)
// shows can be told by name.
func Names() map[string]string {
	names := map[string]string{}
	for _, s := range all() {
		names[s.fn] = s.name
	}
	return names
}

// oneSlot panics unless every key of a run of s shares one hash tag, i.e.
// one Redis Cluster slot: a script's keys in several slots is a build
// defect that Redis Cluster refuses (rueidis panics building such a
// command for a cluster), and checking it here, on every Redis, lets every
// test on a single Redis catch it too. Comparing the tags' text costs a few
// nanoseconds a key (no CRC16 on the hot path).
func oneSlot(s *Script, ks []string) {
	if len(ks) < 2 {
		return
	}
	tag := keys.HashTag(ks[0])
	for _, k := range ks[1:] {
		if keys.HashTag(k) != tag {
			panic(fmt.Sprintf("lua: script %s declares keys of different slots: %q and %q", s.name, ks[0], k))
		}
	}
}

// Pipelined is one run of a script that its caller sends together with
// other commands in one DoMulti: Cmd is the script's FCALL, and Reply
// reads what Redis answered to it.
type Pipelined struct {
	Cmd        rueidis.Completed
	client     rueidis.Client
	script     *Script
	keys, args []string
}

// Pipeline prepares a run of s (from Load) with keys and args on c.
func Pipeline(c rueidis.Client, s *Script, keys, args []string) Pipelined {
	oneSlot(s, keys)
	return Pipelined{Cmd: fcall(c, s, keys, args), client: c, script: s, keys: keys, args: args}
}

// Reply checks r, Redis' answer to Cmd, as Array does. When the server
// lacked the script (IsNotLoaded: the call did not run), the script is run
// once more: its library loaded first, or, on a server without functions,
// as Array runs it there.
func (p Pipelined) Reply(ctx context.Context, r rueidis.RedisResult) ([]rueidis.RedisMessage, error) {
	arr, err := Reply(r)
	if isFunctionNotFound(err) {
		return loadAndCall(ctx, p.client, p.script, p.keys, p.args)
	}
	if IsNotLoaded(err) {
		return Array(ctx, p.client, p.script, p.keys, p.args)
	}
	return arr, err
}

// ErrReply means a script answered with a shape its wrapper does not expect.
var ErrReply = errors.New("lua: unexpected script reply")

// Reply checks a script's reply r as Array does. A pipelined script's
// reply is checked with Pipelined.Reply.
func Reply(r rueidis.RedisResult) ([]rueidis.RedisMessage, error) {
	arr, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	if len(arr) == 0 {
		return nil, ErrReply
	}
	return arr, nil
}

// Array runs s and returns its reply as an array. Every script of ticketd
// answers with an array whose first element is an integer status. Like
// Pipeline, it panics when the keys are not all in one slot. A server
// without the script's library gets it (LoadInto) and the call is made
// again.
func Array(ctx context.Context, c rueidis.Client, s *Script, keys, args []string) ([]rueidis.RedisMessage, error) {
	oneSlot(s, keys)
	if functionless(c, nil) {
		return Reply(s.lua.Exec(ctx, c, keys, args))
	}
	arr, err := Reply(c.Do(ctx, fcall(c, s, keys, args)))
	if functionless(c, err) {
		return Reply(s.lua.Exec(ctx, c, keys, args))
	}
	if !isFunctionNotFound(err) {
		return arr, err
	}
	return loadAndCall(ctx, c, s, keys, args)
}

// loadAndCall loads s's library (LoadInto) and calls s. When the call
// still finds no library, the load's error says why.
func loadAndCall(ctx context.Context, c rueidis.Client, s *Script, keys, args []string) ([]rueidis.RedisMessage, error) {
	lerr := LoadInto(ctx, c, s)
	arr, err := Reply(c.Do(ctx, fcall(c, s, keys, args)))
	if isFunctionNotFound(err) && lerr != nil {
		return nil, fmt.Errorf("lua: load %s: %w", s.name, lerr)
	}
	return arr, err
}

// Run is one run of a script among several (Multi): its keys and args.
type Run struct{ Keys, Args []string }

// Multi runs s once for each of runs in one pipeline and returns Redis'
// answers in their order (check each with Reply). The runs a server
// answered without its library are made again once it has it.
func Multi(ctx context.Context, c rueidis.Client, s *Script, runs ...Run) []rueidis.RedisResult {
	if functionless(c, nil) {
		execs := make([]rueidis.LuaExec, len(runs))
		for i, r := range runs {
			oneSlot(s, r.Keys)
			execs[i] = rueidis.LuaExec{Keys: r.Keys, Args: r.Args}
		}
		return s.lua.ExecMulti(ctx, c, execs...)
	}
	cmds := make(rueidis.Commands, len(runs))
	for i, r := range runs {
		oneSlot(s, r.Keys)
		cmds[i] = fcall(c, s, r.Keys, r.Args)
	}
	res := c.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if functionless(c, r.Error()) {
			return Multi(ctx, c, s, runs...) // none ran
		}
		if isFunctionNotFound(r.Error()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	_ = LoadInto(ctx, c, s) // a run it could not help answers "Function not found" again
	cmds = cmds[:0]
	for _, i := range again {
		cmds = append(cmds, fcall(c, s, runs[i].Keys, runs[i].Args))
	}
	for j, r := range c.DoMulti(ctx, cmds...) {
		res[again[j]] = r
	}
	return res
}

// WaitMillis is WAIT's timeout argument for d: whole milliseconds, at
// least 1 (0 would make WAIT block until the replicas answer).
func WaitMillis(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// waitCmd is WAIT replicas timeout.
func waitCmd(c rueidis.Client, replicas int64, timeout time.Duration) rueidis.Completed {
	return c.B().Wait().Numreplicas(replicas).Timeout(WaitMillis(timeout)).Build()
}

// ArrayWait runs s as Array does, followed by WAIT replicas timeout on
// the same connection, one of rueidis' dedicated ones (WAIT blocks, so it
// must not stall the shared pipeline): acked is how many replicas
// acknowledged every write made on that connection up to the script's.
// While fewer did, WAIT is sent again on it until patience has passed
// (none: one WAIT). When the server lacked the script's library (the call
// did not run), the library is loaded on that connection and the pair is
// sent again. A dedicated connection follows no redirect: on a Redis
// Cluster whose slot moved, the script's MOVED comes back as an error
// rather than a reply from another node with WAIT's answer from this one.
// A WAIT that fails counts as no replica: the script ran, and what it
// wrote is not known to be on any.
func ArrayWait(ctx context.Context, c rueidis.Client, s *Script, keys, args []string, replicas int64,
	timeout, patience time.Duration) (arr []rueidis.RedisMessage, acked int64, err error) {
	p := Pipeline(c, s, keys, args)
	wait := func() rueidis.Completed { return waitCmd(c, replicas, timeout) }
	err = c.Dedicated(func(d rueidis.DedicatedClient) error {
		res := d.DoMulti(ctx, p.Cmd, wait())
		if isUnknownFcall(res[0].Error()) {
			functionless(c, res[0].Error())
			res = d.DoMulti(ctx, fcall(c, s, keys, args), wait()) // EVALSHA now
		}
		if isNoScript(res[0].Error()) {
			eval := c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
			res = d.DoMulti(ctx, eval, wait())
		}
		if isFunctionNotFound(res[0].Error()) {
			if err := loadOn(ctx, d, s); err != nil {
				return fmt.Errorf("lua: load %s: %w", s.name, err)
			}
			res = d.DoMulti(ctx, fcall(c, s, keys, args), wait())
		}
		var err error
		if arr, err = Reply(res[0]); err != nil {
			return err
		}
		acked, _ = res[1].AsInt64()
		for until := time.Now().Add(patience); acked < replicas && time.Now().Before(until) && ctx.Err() == nil; {
			acked, _ = d.Do(ctx, wait()).AsInt64()
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return arr, acked, nil
}

// Call is one script run of ArraysWait: s with keys and args, and, once
// ArraysWait returns, its reply or error and the replicas that
// acknowledged it.
type Call struct {
	Script     *Script
	Keys, Args []string

	Arr   []rueidis.RedisMessage
	Acked int64
	Err   error
}

// ArraysWait is ArrayWait (no patience) for several scripts at once: they
// go down one dedicated connection, then one WAIT after them all, which
// covers every write the connection made (Redis answers WAIT once the
// replicas hold its client's last write), so the calls share one round
// trip and one WAIT. All their keys must be in one slot, the first
// call's (a dedicated connection follows no redirect). A call whose
// server lacked its library (it did not run) is run again alone, with
// ArrayWait, on a dedicated connection of its own. An error of the
// connection is every call's.
func ArraysWait(ctx context.Context, c rueidis.Client, calls []*Call, replicas int64, timeout time.Duration) {
	cmds := make(rueidis.Commands, 0, len(calls)+1)
	for _, call := range calls {
		cmds = append(cmds, Pipeline(c, call.Script, call.Keys, call.Args).Cmd)
	}
	cmds = append(cmds, waitCmd(c, replicas, timeout))
	var res []rueidis.RedisResult
	_ = c.Dedicated(func(d rueidis.DedicatedClient) error { // errors come in res
		res = d.DoMulti(ctx, cmds...)
		return nil
	})
	acked, _ := res[len(calls)].AsInt64() // a WAIT that fails counts as no replica
	for i, call := range calls {
		call.Arr, call.Err = Reply(res[i])
		call.Acked = acked
		if IsNotLoaded(call.Err) {
			call.Arr, call.Acked, call.Err = ArrayWait(ctx, c, call.Script, call.Keys, call.Args, replicas, timeout, 0)
		}
	}
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
