package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// secretWords are the words (of an identifier split at case changes and
// underscores) that make a value a secret or a check of one: comparing it
// with == or bytes.Equal tells a timing attacker how much of a guess was
// right. "key" alone is not one of them: channel and publishable keys are
// public identifiers, and Redis or idempotency keys are no secrets.
var secretWords = map[string]bool{
	"secret": true, "secrets": true, "token": true, "tokens": true, "tok": true, "signature": true, "sig": true,
	"mac": true, "hmac": true, "hash": true, "digest": true, "password": true, "passwd": true, "bearer": true,
}

// secretPairs are two-word names that are secrets though neither word is.
var secretPairs = [][2]string{{"signing", "key"}, {"api", "key"}, {"secrets", "key"}, {"picker", "key"}}

// words splits an identifier into lower-case words: "OwnToken" -> own,
// token; "secret_hash" -> secret, hash; "HMACSum" -> hmac, sum.
func words(id string) []string {
	var out []string
	rs := []rune(id)
	start := 0
	flush := func(end int) {
		if end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '_':
			flush(i)
			start = i + 1
		case i > start && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
			i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])):
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}

func secretName(id string) bool {
	ws := words(id)
	have := map[string]bool{}
	for _, w := range ws {
		if secretWords[w] {
			return true
		}
		have[w] = true
	}
	for _, p := range secretPairs {
		if have[p[0]] && have[p[1]] {
			return true
		}
	}
	return false
}

// operandName is the name an operand goes by: an identifier, a field
// (x.Token), what is indexed or sliced (sum[i], h[7:]), what a conversion
// converts (string(tok)), a call's function (mac(key, msg)); "" for
// anything else.
func operandName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.IndexExpr:
		return operandName(x.X)
	case *ast.SliceExpr:
		return operandName(x.X)
	case *ast.StarExpr:
		return operandName(x.X)
	case *ast.ParenExpr:
		return operandName(x.X)
	case *ast.CallExpr:
		if conv := conversionOf(x); conv != nil {
			return operandName(conv)
		}
		return operandName(x.Fun)
	}
	return ""
}

// conversionOf returns the converted value of string(x), []byte(x) or
// [N]byte(x), nil for any other call.
func conversionOf(c *ast.CallExpr) ast.Expr {
	if len(c.Args) != 1 {
		return nil
	}
	switch f := c.Fun.(type) {
	case *ast.Ident:
		if f.Name == "string" {
			return c.Args[0]
		}
	case *ast.ArrayType:
		if id, ok := f.Elt.(*ast.Ident); ok && id.Name == "byte" {
			return c.Args[0]
		}
	}
	return nil
}

// public reports whether an operand can hold nothing secret: nil, a
// literal, true/false, a length, a constant of the package, or a call of
// only such values. Comparing a secret with one of these (is it set, is it
// this fixed word) leaks nothing of the secret.
func public(e ast.Expr, consts map[string]bool) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.Ident:
		return x.Name == "nil" || x.Name == "true" || x.Name == "false" || consts[x.Name]
	case *ast.ParenExpr:
		return public(x.X, consts)
	case *ast.CallExpr:
		if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "len" || id.Name == "cap") {
			return true
		}
		// A call of nothing but public values (json.Delim('{'), a
		// conversion of a literal) is public too.
		for _, a := range x.Args {
			if !public(a, consts) {
				return false
			}
		}
		return len(x.Args) > 0
	}
	return false
}

// equalFuncs are the comparisons that return early at the first
// difference.
var equalFuncs = map[string]bool{
	"bytes.Equal": true, "bytes.EqualFold": true, "bytes.Compare": true, "bytes.HasPrefix": true,
	"strings.EqualFold": true, "strings.Compare": true, "strings.HasPrefix": true,
	"reflect.DeepEqual": true, "slices.Equal": true,
}

// timingUnsafe lists the comparisons in file whose operands are named as
// secrets and that do not go through crypto/subtle or hmac.Equal: an ==
// or != whose other side is not public (nil, a literal, a length, a
// constant), and a call of a short-circuiting equality function with a
// secret-named argument. consts are the package's constant names.
func timingUnsafe(fset *token.FileSet, file *ast.File, consts map[string]bool) []string {
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if x.Op != token.EQL && x.Op != token.NEQ {
				return true
			}
			if public(x.X, consts) || public(x.Y, consts) {
				return true
			}
			l, r := operandName(x.X), operandName(x.Y)
			if secretName(l) || secretName(r) {
				report(x, l+" "+x.Op.String()+" "+r)
			}
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || !equalFuncs[pkg.Name+"."+sel.Sel.Name] {
				return true
			}
			for _, a := range x.Args {
				if !public(a, consts) && secretName(operandName(a)) {
					report(x, pkg.Name+"."+sel.Sel.Name+"("+operandName(a)+", ...)")
					break
				}
			}
		}
		return true
	})
	return out
}

// packageConsts are the names of the constants declared in files.
func packageConsts(files []*ast.File) map[string]bool {
	m := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					m[n.Name] = true
				}
			}
		}
	}
	return m
}

// scanTimingUnsafe parses every non-test Go file under root, by package
// directory, and returns timingUnsafe's findings, sorted.
func scanTimingUnsafe(t *testing.T, root string) []string {
	t.Helper()
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, paths := range byDir {
		var files []*ast.File
		for _, p := range paths {
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		consts := packageConsts(files)
		for _, f := range files {
			out = append(out, timingUnsafe(fset, f, consts)...)
		}
	}
	sort.Strings(out)
	return out
}

// TestSecurityTimingSafeComparisons: every comparison of a secret, token,
// signature, MAC or hash in ticketd's code (every non-test file of the
// module, bench included) goes through crypto/subtle or hmac.Equal, which
// take the same time however much of a guess matches.
func TestSecurityTimingSafeComparisons(t *testing.T) {
	t.Parallel()
	if found := scanTimingUnsafe(t, filepath.Join("..", "..")); len(found) > 0 {
		t.Fatalf("secrets compared with == or a short-circuiting function (use subtle.ConstantTimeCompare or hmac.Equal):\n%s",
			strings.Join(found, "\n"))
	}
}

// The check finds a planted comparison of each kind and passes what is
// harmless: a presence test, a length, a constant, a constant-time call.
func TestSecurityTimingCheckCatchesAPlantedComparison(t *testing.T) {
	t.Parallel()
	const planted = `package p

import (
	"bytes"
	"crypto/hmac"
	"crypto/subtle"
	"strings"
)

const kindToken = "bearer"

type channel struct{ SecretHash, Name string }

func bad(c *channel, secret, sig []byte, tok, presented, want string) bool {
	if tok == presented { // 1
		return true
	}
	if string(secret) != want { // 2
		return false
	}
	if c.SecretHash == hashOf(secret) { // 3
		return true
	}
	if bytes.Equal(sig, []byte(want)) { // 4
		return true
	}
	return strings.EqualFold(presented, c.SecretHash) // 5
}

func harmless(c *channel, secret, sig []byte, tok, want string, err error) bool {
	if tok == "" || len(secret) == 0 || err != nil || c.Name == want || tok == kindToken || sig == nil {
		return false
	}
	return subtle.ConstantTimeCompare(secret, []byte(want)) == 1 && hmac.Equal(sig, []byte(tok))
}

func hashOf(b []byte) string { return string(b) }
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	found := scanTimingUnsafe(t, dir)
	var lines []int
	for _, f := range found {
		// ".../p.go:15:5: tok == presented"
		parts := strings.SplitN(f[strings.LastIndex(f, "p.go:")+len("p.go:"):], ":", 2)
		n, _ := strconv.Atoi(parts[0])
		lines = append(lines, n)
	}
	if want := []int{15, 18, 21, 24, 27}; !equalInts(lines, want) {
		t.Fatalf("findings on lines %v, want %v:\n%s", lines, want, strings.Join(found, "\n"))
	}
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"OwnToken", true}, {"secretHash", true}, {"SigningKey", true}, {"HMACSum", true}, {"sig", true},
		{"signingKeySealed", true}, {"bearerSum", true}, {"key", false}, {"IdempotencyKey", false},
		{"tokenizer", false}, {"design", false}, {"Signed", false}, {"macro", false}, {"hashtag", false},
	} {
		if got := secretName(c.id); got != c.want {
			t.Errorf("secretName(%q) = %v, want %v (words %v)", c.id, got, c.want, words(c.id))
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
