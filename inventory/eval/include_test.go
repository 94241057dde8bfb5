package eval

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func lib(text string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(text)} }

// Every embedded script expands: a defect in an include fails here (and
// Load panics at start), not in Redis when the script first runs.
func TestEveryScriptExpands(t *testing.T) {
	names, err := fs.Glob(files, "*.lua")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, n := range names {
		src, err := Source(strings.TrimSuffix(n, ".lua"))
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		for _, line := range strings.Split(string(src), "\n") {
			if _, flag := flagLines[line]; strings.HasPrefix(line, "--@") && !flag {
				t.Errorf("%s: %q left in the expanded script", n, line)
			}
		}
	}
}

// Names names every script by the function name its FCALL carries
// (Load's).
func TestNamesTellEveryScriptByFunction(t *testing.T) {
	names := Names()
	all, _ := fs.Glob(files, "*.lua")
	if len(names) != len(all) {
		t.Fatalf("%d names for %d scripts", len(names), len(all))
	}
	s := Load("order_reserve")
	if got := names[s.Function()]; got != "order_reserve" {
		t.Fatalf("order_reserve's function %s is named %q", s.Function(), got)
	}
}

// A library may include another; each library is expanded once, where it
// is first included, before the text that uses it.
func TestLibraryIncludesAnotherOnce(t *testing.T) {
	fsys := fstest.MapFS{
		"lib/base.lua": lib("local function base() return 1 end\n"),
		"lib/mid.lua":  lib("--@include base\nlocal function mid() return base() end\n"),
		"s.lua":        lib("-- s\n--@include mid\n--@include base\n--@include mid\nreturn mid()\n"),
	}
	src, err := expand(fsys, "s")
	if err != nil {
		t.Fatal(err)
	}
	want := "-- s\nlocal function base() return 1 end\nlocal function mid() return base() end\nreturn mid()\n"
	if string(src) != want {
		t.Fatalf("expanded:\n%s\nwant:\n%s", src, want)
	}
	// lib/cart includes lib/capacity (and lib/check, lib/reply) itself: a script
	// naming only cart gets capacity_short, once (cart_refusal calls it).
	fsys["c.lua"] = lib("--@include cart\nreturn cart_refusal\n")
	fsys["lib/cart.lua"] = lib(mustRead(t, "lib/cart.lua"))
	fsys["lib/capacity.lua"] = lib(mustRead(t, "lib/capacity.lua"))
	fsys["lib/check.lua"] = lib(mustRead(t, "lib/check.lua"))
	fsys["lib/reply.lua"] = lib(mustRead(t, "lib/reply.lua"))
	fsys["lib/seatholds.lua"] = lib(mustRead(t, "lib/seatholds.lua"))
	src, err = expand(fsys, "c")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "local function capacity_short("); n != 1 ||
		strings.Index(string(src), "local function capacity_short(") > strings.Index(string(src), "local function cart_refusal(") {
		t.Fatalf("capacity_short defined %d times, or after the cart: %s", n, src)
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := files.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Any directive-like line Source does not expand is an error, never left
// as a comment that leaves the script without its library.
func TestIncludeLinesNotExpandedAreErrors(t *testing.T) {
	for name, line := range map[string]string{
		"indented":          "  --@include base",
		"tab-indented":      "\t--@include base",
		"misspelt":          "--@inclde base",
		"space after --":    "-- @include base",
		"two spaces":        "--@include  base",
		"no name":           "--@include",
		"unknown library":   "--@include nosuch",
		"path as the name":  "--@include ../s",
		"text after a name": "--@include base extra",
	} {
		fsys := fstest.MapFS{"lib/base.lua": lib("local x = 1\n"), "s.lua": lib("-- s\n" + line + "\nreturn 1\n")}
		if src, err := expand(fsys, "s"); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s (%q): expanded to %q, %v; want an error naming line 2", name, line, src, err)
		}
	}
	// Mentions of the directive inside a comment's text are text.
	fsys := fstest.MapFS{"lib/base.lua": lib("local x = 1\n"),
		"s.lua": lib("-- take it with\n--   --@include base\n-- after \"--@include base\"\nreturn 1\n")}
	if _, err := expand(fsys, "s"); err != nil {
		t.Fatalf("a comment quoting an include: %v", err)
	}
	cycle := fstest.MapFS{"lib/a.lua": lib("--@include b\n"), "lib/b.lua": lib("--@include a\n"), "s.lua": lib("--@include a\n")}
	if _, err := expand(cycle, "s"); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("include cycle: %v, want an error", err)
	}
}

// lib/reply is constants: a script that includes it runs with each
// R.<NAME> of its code as the number, without the table; its comments keep
// the names; a name the table lacks, or a table that gives one number two
// names, is an error.
func TestReplyCodesBecomeNumbers(t *testing.T) {
	table := "-- codes\nlocal R = {\n  OK = 0, -- done\n  STOPPED = 7,\n}\n"
	fsys := fstest.MapFS{
		"lib/reply.lua": lib(table),
		"lib/base.lua":  lib("--@include reply\nlocal function base() return {R.OK} end\n"),
		"s.lua":         lib("-- s: {R.STOPPED} when stopped\n--@include base\nif x then return {R.STOPPED} end -- R.STOPPED\nreturn base()\n"),
	}
	src, err := expand(fsys, "s")
	if err != nil {
		t.Fatal(err)
	}
	want := "-- s: {R.STOPPED} when stopped\nlocal function base() return {0} end\nif x then return {7} end -- R.STOPPED\nreturn base()\n"
	if string(src) != want {
		t.Fatalf("expanded:\n%s\nwant:\n%s", src, want)
	}
	fsys["t.lua"] = lib("--@include reply\nreturn {R.STOPPD}\n")
	if _, err := expand(fsys, "t"); err == nil || !strings.Contains(err.Error(), "R.STOPPD") {
		t.Errorf("unknown name: %v, want an error naming it", err)
	}
	for name, bad := range map[string]string{
		"a number twice": "local R = {\n  OK = 0,\n  STOPPED = 0,\n}\n",
		"a name twice":   "local R = {\n  OK = 0,\n  OK = 1,\n}\n",
		"not an entry":   "local R = {\n  OK = 0,\n  STOPPED = OK + 7,\n}\n",
		"no table":       "local codes = {\n  OK = 0,\n}\n",
	} {
		if _, err := parseReplyCodes([]byte("-- reply\n" + bad)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// Source leaves out the top-level functions a script never reaches, and
// keeps every one it may call: those its code names, and theirs, however
// deep; a name in a whole-line comment keeps nothing.
func TestUnreachedFunctionsAreLeftOut(t *testing.T) {
	fsys := fstest.MapFS{
		"lib/l.lua": lib("local function leaf(x)\n  return x\nend\n" +
			"local function mid(x)\n  return leaf(x) + 1\nend\n" +
			"local function unused(x)\n  return x\nend\n" +
			"-- commented() is not a call: named in a comment only\n" +
			"local function commented()\n  return 0\nend\n" +
			"local K = 'kept'\n"),
		"s.lua": lib("--@include l\n-- commented()\nreturn mid(1) .. K\n"),
	}
	src, err := expand(fsys, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"leaf", "mid"} {
		if !strings.Contains(string(src), "local function "+fn+"(") {
			t.Errorf("%s left out; it is called:\n%s", fn, src)
		}
	}
	for _, fn := range []string{"unused", "commented"} {
		if strings.Contains(string(src), "local function "+fn+"(") {
			t.Errorf("%s kept; nothing calls it:\n%s", fn, src)
		}
	}
	if !strings.Contains(string(src), "local K = 'kept'") {
		t.Errorf("a top-level statement left out:\n%s", src)
	}
	// Every script: a library function named in its code is defined in it
	// (nothing it calls was left out).
	libFns := map[string]bool{}
	libs, _ := fs.Glob(files, "lib/*.lua")
	for _, l := range libs {
		b, _ := files.ReadFile(l)
		for _, m := range topFunc.FindAllSubmatch(b, -1) {
			libFns[string(m[1])] = true
		}
	}
	names, err := fs.Glob(files, "*.lua")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, n := range names {
		name := strings.TrimSuffix(n, ".lua")
		src, err := Source(name)
		if err != nil {
			t.Fatal(err)
		}
		defined := map[string]bool{}
		for _, m := range topFunc.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		for _, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			for _, w := range ident.FindAllString(line, -1) {
				if libFns[w] && !defined[w] {
					t.Errorf("%s names %s, which it does not define", name, w)
				}
			}
		}
	}
}

// Every script and library has the layout shake reads: each top-level
// function closes with an "end" at the start of a line and indents its
// body (or is one line), so no function's lines are misread and shaking
// never stops for a file. A function in another layout would be kept
// whole, its script unshaken: this test says which.
func TestEveryFileHasTheLayoutShakeReads(t *testing.T) {
	var all []string
	for _, pat := range []string{"*.lua", "lib/*.lua"} {
		m, err := fs.Glob(files, pat)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m...)
	}
	for _, n := range all {
		b, err := files.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		blocks, order, ok := functionBlocks(bytes.SplitAfter(b, []byte("\n")))
		if !ok {
			t.Errorf("%s: a top-level function without a closing \"end\" at the start of a line, or with a body line there, or defined twice", n)
			continue
		}
		want := strings.Count("\n"+string(b), "\nlocal function ") // every line that starts one
		if len(order) != want || len(blocks) != want {
			t.Errorf("%s: %d top-level functions read, want %d", n, len(order), want)
		}
	}
	// one-line functions, and a layout shake does not read (kept whole)
	src := []byte("local function one(x) return x end\nlocal function two(x)\n  return x\nend\nreturn one(1)\n")
	if got := string(shake(src)); got != "local function one(x) return x end\nreturn one(1)\n" {
		t.Errorf("a one-line function: %q", got)
	}
	bad := []byte("local function f()\nif x then\n  return 1\nend\nend\nreturn 2\n")
	if got := shake(bad); string(got) != string(bad) {
		t.Errorf("a body line at the start of a line was shaken: %q", got)
	}
}
