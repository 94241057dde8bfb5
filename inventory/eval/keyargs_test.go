package eval_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/lua"
)

// Scripts name no key of their own: every key a script touches is one its
// caller declared (KEYS), never one built inside it from a prefix, an
// argument or a literal, which could leave the declared keys' slot (Redis
// Cluster 7.0 runs a script's undeclared key when the node happens to own
// its slot, so a cluster does not always catch it). The wrappers' keys are
// checked for one slot by inventory/keys and by eval.Array/Pipeline.
//
// The check reads every script as Redis runs it (libraries included):
// the key argument of each redis.call/pcall must be KEYS[...],
// unpack(KEYS, ...) or a name, and every assignment to such a name (a
// local, a table field, a function parameter's call site aside) must not
// build text: no '..', ARGV, quotes or string functions.
func TestScriptsTouchOnlyDeclaredKeys(t *testing.T) {
	files, err := fs.Glob(lua.Files, "*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	builds := regexp.MustCompile(`\.\.|ARGV|['"]|string\.|format\(|tostring\(`)
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		src, err := eval.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		text := stripComments(string(src))
		names := map[string]bool{}
		for _, m := range keyCall.FindAllStringSubmatch(text, -1) {
			if noKey[m[1]] || m[2] == "" {
				continue
			}
			n, ok := keyArgName(m[2])
			if !ok {
				t.Errorf("%s: redis.call('%s', %s ...): the key must be a declared key (KEYS[...] or a name holding one)", name, m[1], m[2])
			} else if n != "" {
				names[n] = true
			}
		}
		for n := range names {
			assign := regexp.MustCompile(`(?m)(?:^|[\s{,(])` + regexp.QuoteMeta(n) + `\s*=\s*([^=\n][^\n]*)`)
			for _, at := range assign.FindAllStringSubmatchIndex(text, -1) {
				rhs := text[at[2]:at[3]]
				// A table field ("{a = x, b = y" or ", b = y"): its own
				// value only.
				before := strings.TrimRight(text[:at[0]+1], " \t")
				field := strings.HasSuffix(before, "{") || strings.HasSuffix(before, ",")
				if i := strings.Index(rhs, ","); i >= 0 && field {
					rhs = rhs[:i]
				}
				if builds.MatchString(rhs) {
					t.Errorf("%s: %s = %s: a key name is built inside the script", name, n, strings.TrimSpace(rhs))
				}
			}
		}
	}
}

// stripComments drops Lua line comments (the headers quote key shapes).
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	keyCall = regexp.MustCompile(`redis\.p?call\(\s*'([A-Z]+)'\s*(?:,\s*([^,)]*))?`)
	keyRef  = regexp.MustCompile(`^KEYS\[[^\]]+\]$`)
	keyName = regexp.MustCompile(`^(?:unpack\()?([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[[A-Za-z0-9_]+\])?$`)
	// commands whose first argument is not a key
	noKey = map[string]bool{"TIME": true, "XGROUP": true, "XINFO": true}
)

// keyArgName checks a key argument: KEYS[...] (name ""), or a name (a
// local, a table's field or element, unpack of a table of keys) whose
// assignments the caller checks. ARGV and anything built are refused.
func keyArgName(arg string) (name string, ok bool) {
	arg = strings.TrimSpace(arg)
	if keyRef.MatchString(arg) || arg == "unpack(KEYS" {
		return "", true
	}
	m := keyName.FindStringSubmatch(arg)
	if m == nil || m[1] == "ARGV" || m[1] == "KEYS" {
		return "", false
	}
	if m[2] != "" {
		return m[2], true // k.hold: the field hold
	}
	return m[1], true
}

// The check refuses a key built from an argument, a literal or ARGV.
func TestScriptKeyCheckFindsBuiltKeys(t *testing.T) {
	for _, src := range []string{
		"redis.call('SET', KEYS[1] .. ':x', 1)",
		"redis.call('SET', ARGV[1], 1)",
		"redis.call('SET', 'fixed', 1)",
		"redis.call('SET', ARGV[1]..KEYS[1])",
	} {
		m := keyCall.FindStringSubmatch(src)
		if _, ok := keyArgName(m[2]); ok {
			t.Errorf("%s passes the check", src)
		}
	}
	for _, src := range []string{"redis.call('GET', KEYS[k.seat + s])", "redis.call('MGET', unpack(KEYS, 4, 3 + n))", "redis.call('HGET', k.dcused, c)"} {
		m := keyCall.FindStringSubmatch(src)
		if _, ok := keyArgName(m[2]); !ok {
			t.Errorf("%s fails the check", src)
		}
	}
}

// Scripts answer their reply codes by name from lib/reply.lua's table R
// ({R.STOPPED}), never by number ({7}), so one meaning stays one code in
// every script (inventory/reply holds the Go side to the table). The check
// reads every script and library as written: no table constructor opens
// with a number, and every R.<NAME> is in the table; and every script as
// Redis runs it: each name became its number (a script that names codes
// without including lib/reply would be left with R, nil in Redis).
func TestScriptsNameTheirReplyCodes(t *testing.T) {
	defined, err := eval.ReplyCodes()
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(lua.Files, "*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	libs, _ := fs.Glob(lua.Files, "lib/*.lua")
	for _, f := range append(files, libs...) {
		b, err := fs.ReadFile(lua.Files, f)
		if err != nil {
			t.Fatal(err)
		}
		text := stripComments(string(b))
		for _, bad := range bareCodes(text) {
			t.Errorf("%s: %q: a reply code is a name of lib/reply.lua (R.<NAME>), not a number", f, bad)
		}
		for _, m := range replyRef.FindAllStringSubmatch(text, -1) {
			if _, ok := defined[m[1]]; !ok {
				t.Errorf("%s: R.%s is not in lib/reply.lua", f, m[1])
			}
		}
	}
	for _, f := range files {
		src, err := eval.Source(strings.TrimSuffix(f, ".lua"))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if left := replyRef.FindString(stripComments(string(src))); left != "" {
			t.Errorf("%s runs with %s: it names reply codes without --@include reply", f, left)
		}
	}
}

var (
	replyRef = regexp.MustCompile(`\bR\.([A-Za-z_][A-Za-z0-9_]*)`)
	// a table constructor whose first element is a number literal
	bareCode = regexp.MustCompile(`\{\s*-?\d[^}\n]*`)
)

// bareCodes returns the table constructors of a script (comments
// stripped) that open with a number.
func bareCodes(text string) []string { return bareCode.FindAllString(text, -1) }

// The check finds a code given as a number, however it is spaced, and
// passes names and tables that open with something else.
func TestBareReplyCodesAreFound(t *testing.T) {
	for _, src := range []string{"return {7}", "return { 2, field, left }", "local out = {1, now}", "return {0}"} {
		if len(bareCodes(src)) == 0 {
			t.Errorf("%s passes the check", src)
		}
	}
	for _, src := range []string{"return {R.STOPPED}", "return {R.SHORT, f, 2}", "return {tonumber(ARGV[2]) - 1}",
		"local t = {}", "for _, s in ipairs({num - 1, num + 1}) do"} {
		if got := bareCodes(src); len(got) != 0 {
			t.Errorf("%s fails the check: %q", src, got)
		}
	}
}
