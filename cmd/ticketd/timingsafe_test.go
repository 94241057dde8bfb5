package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
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

// publicPairs are two-word names that are public though their first word
// is a secret word: a Redis Cluster hash tag names a slot.
var publicPairs = [][2]string{{"hash", "tag"}}

func secretName(id string) bool {
	ws := words(id)
	have := map[string]bool{}
	for i, w := range ws {
		if secretWords[w] && !publicPair(ws, i) {
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

// publicPair reports whether ws[i] begins one of publicPairs.
func publicPair(ws []string, i int) bool {
	for _, p := range publicPairs {
		if i+1 < len(ws) && ws[i] == p[0] && ws[i+1] == p[1] {
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

// literalWords are the words of a string literal that name a secret when
// the literal is an argument of a call whose result is compared: the
// header Peek("x-service-signature"), Peek("Authorization"), a lookup
// Get("signing-key"). Unlike in identifiers, "key" counts here: a value
// fetched by a name with "key" in it is treated as a credential (the
// public channel key compared in constant time costs nothing).
var literalWords = map[string]bool{"authorization": true, "key": true, "keys": true}

// secretLiteral reports whether a string literal's text names a secret:
// its words (split at anything not a letter or digit, then as an
// identifier) hold a secret word.
func secretLiteral(lit string) bool {
	s, err := strconv.Unquote(lit)
	if err != nil {
		return false
	}
	parts := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, p := range parts {
		if secretName(p) {
			return true
		}
		for _, w := range words(p) {
			if literalWords[w] {
				return true
			}
		}
	}
	return false
}

// passThrough are the functions (by name, of any package or receiver)
// whose result is their argument re-encoded or trimmed: a secret in, a
// secret out. Any other function taking a secret (a verification, an
// encryption) returns no secret.
var passThrough = map[string]bool{
	"EncodeToString": true, "DecodeString": true, "TrimSpace": true, "TrimPrefix": true, "TrimSuffix": true,
	"Trim": true, "ToLower": true, "ToUpper": true, "Sprintf": true, "Sprint": true, "Clone": true,
}

// taint is the set of locals that hold a secret whatever their names, by
// the object they denote (so an inner e := ... is not the outer tainted
// e); info resolves identifiers to objects.
type taint struct {
	info *types.Info
	set  map[types.Object]bool
}

func (t taint) has(id *ast.Ident) bool {
	if t.info == nil {
		return false
	}
	o := t.info.ObjectOf(id)
	return o != nil && t.set[o]
}

func (t taint) add(id *ast.Ident) {
	if o := t.info.ObjectOf(id); o != nil {
		t.set[o] = true
	}
}

// secretExpr reports whether e can hold a secret, whatever its name: it
// is named as one (secretName) or is a local tainted one step back; it is
// read from one (c.SecretHash, secrets[id], sum[:8]); it comes from a
// function, method or package named as one (Signature(...),
// hmac.New(...).Sum(nil), lookupSecret(id)) or a method of a tainted
// value (m.Sum(nil)); it is fetched by a string literal naming one
// (Header.Peek("x-service-signature")); or it is one converted, encoded or
// trimmed (string(tok), hex.EncodeToString(sum)). A length (len, cap) is
// no secret.
func secretExpr(e ast.Expr, tainted taint) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return secretName(x.Name) || tainted.has(x)
	case *ast.SelectorExpr:
		return secretName(x.Sel.Name) || secretExpr(x.X, tainted)
	case *ast.IndexExpr:
		return secretExpr(x.X, tainted)
	case *ast.SliceExpr:
		return secretExpr(x.X, tainted)
	case *ast.StarExpr:
		return secretExpr(x.X, tainted)
	case *ast.ParenExpr:
		return secretExpr(x.X, tainted)
	case *ast.UnaryExpr:
		return secretExpr(x.X, tainted)
	case *ast.CallExpr:
		if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "len" || id.Name == "cap") {
			return false
		}
		if conv := conversionOf(x); conv != nil {
			return secretExpr(conv, tainted)
		}
		if secretExpr(x.Fun, tainted) {
			return true
		}
		through := false
		switch f := x.Fun.(type) {
		case *ast.SelectorExpr:
			through = passThrough[f.Sel.Name]
		case *ast.Ident:
			through = passThrough[f.Name]
		}
		for _, a := range x.Args {
			if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if secretLiteral(lit.Value) {
					return true
				}
				continue
			}
			if through && secretExpr(a, tainted) {
				return true
			}
		}
	}
	return false
}

// taintedLocals returns the names of the locals of fn assigned (:=, =,
// var) a value secretExpr calls secret (info tells which declaration a
// name means): want := Signature(key, msg),
// sum := hmac.New(...).Sum(nil), stored := lookupSecret(id), got :=
// ctx.Request.Header.Peek("Authorization"). Of a multi-value assignment
// (v, ok := secrets[id]; v, err := lookupSecret(id)) only the first is
// the value. Assignments are taken in source order, so a local made of a
// tainted one is tainted too.
func taintedLocals(fn ast.Node, info *types.Info) taint {
	tainted := taint{info: info, set: map[types.Object]bool{}}
	assign := func(lhs []ast.Expr, rhs []ast.Expr) {
		switch {
		case len(lhs) == len(rhs):
			for i, r := range rhs {
				if id, ok := lhs[i].(*ast.Ident); ok && secretExpr(r, tainted) {
					tainted.add(id)
				}
			}
		case len(rhs) == 1 && len(lhs) > 1:
			if id, ok := lhs[0].(*ast.Ident); ok && secretExpr(rhs[0], tainted) {
				tainted.add(id)
			}
		}
	}
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE || x.Tok == token.ASSIGN {
				assign(x.Lhs, x.Rhs)
			}
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(x.Names))
			for i, n := range x.Names {
				lhs[i] = n
			}
			assign(lhs, x.Values)
		}
		return true
	})
	return tainted
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
		// conversion of a literal) is public too, unless it fetches a
		// secret by name (Header.Peek("x-service-signature")).
		if secretExpr(x, taint{}) {
			return false
		}
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

// timingUnsafe lists the comparisons in file that can involve a secret
// (secretExpr, with the locals of the enclosing function tainted by
// taintedLocals) and that do not go through crypto/subtle or hmac.Equal:
// an == or != whose other side is not public (nil, a literal, a length, a
// constant), and a call of a short-circuiting equality function with a
// secret argument. consts are the constant names of the package (its
// functions' local ones included); info resolves the file's identifiers.
func timingUnsafe(fset *token.FileSet, file *ast.File, info *types.Info, consts map[string]bool) []string {
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	check := func(tainted taint) func(ast.Node) bool {
		return func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				if x.Op != token.EQL && x.Op != token.NEQ {
					return true
				}
				if public(x.X, consts) || public(x.Y, consts) {
					return true
				}
				if secretExpr(x.X, tainted) || secretExpr(x.Y, tainted) {
					report(x, describe(x.X)+" "+x.Op.String()+" "+describe(x.Y))
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
				// As with ==, a comparison with a public value (a fixed
				// prefix, a literal) tells nothing of the secret.
				for _, a := range x.Args {
					if public(a, consts) {
						return true
					}
				}
				for _, a := range x.Args {
					if secretExpr(a, tainted) {
						report(x, pkg.Name+"."+sel.Sel.Name+"("+describe(a)+", ...)")
						break
					}
				}
			}
			return true
		}
	}
	for _, d := range file.Decls {
		tainted := taint{info: info, set: map[types.Object]bool{}}
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
			tainted = taintedLocals(fn.Body, info)
		}
		ast.Inspect(d, check(tainted))
	}
	return out
}

// describe names an operand in a finding: its operandName, or its kind.
func describe(e ast.Expr) string {
	if n := operandName(e); n != "" {
		return n
	}
	return fmt.Sprintf("%T", e)
}

// packageConsts are the names of the constants declared in files, at the
// top level or in a function (const p = "Bearer ").
func packageConsts(files []*ast.File) map[string]bool {
	m := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			g, ok := n.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				return true
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					m[n.Name] = true
				}
			}
			return false
		})
	}
	return m
}

// emptyImporter imports every package as an empty one: the scan needs the
// scopes of a package's own code, not its dependencies.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
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
		// Type-checked for scopes only: which declaration each name
		// means. Imports are empty stand-ins, so the errors about their
		// members are expected and ignored; locals resolve regardless.
		info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
		_, _ = conf.Check(filepath.Dir(paths[0]), fset, files, info)
		for _, f := range files {
			out = append(out, timingUnsafe(fset, f, info, consts)...)
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
	// Every line marked "// flagged" must be found, and no other.
	const planted = `package p

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

const kindToken = "bearer"

type channel struct{ SecretHash, Name string }

func bad(c *channel, secret, sig []byte, tok, presented, want string) bool {
	if tok == presented { // flagged
		return true
	}
	if string(secret) != want { // flagged
		return false
	}
	if c.SecretHash == hashOf(secret) { // flagged
		return true
	}
	if bytes.Equal(sig, []byte(want)) { // flagged
		return true
	}
	return strings.EqualFold(presented, c.SecretHash) // flagged
}

// Secrets by where they come from, in locals with neutral names.
type header struct{}

func (header) Peek(name string) []byte { return nil }

type request struct{ Header header }
type requestCtx struct{ Request request }

func Signature(key, order string) string { return key + order }
func lookupSecret(id string) []byte    { return nil }

func badShapes(ctx *requestCtx, k []byte, key, order, id string, presented []byte, store map[string][]byte) bool {
	want := Signature(key, order)
	if bytes.Equal(ctx.Request.Header.Peek("x-service-signature"), []byte(want)) { // flagged
		return true
	}
	if string(ctx.Request.Header.Peek("x-service-signature")) == want { // flagged
		return true
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte(order))
	expected := hex.EncodeToString(m.Sum(nil))
	got := string(ctx.Request.Header.Peek("Authorization"))
	if got == expected { // flagged
		return true
	}
	sum := hmac.New(sha256.New, k).Sum(nil)
	if bytes.Equal(presented, sum) { // flagged
		return true
	}
	stored := lookupSecret(id)
	if bytes.Equal(presented, stored) { // flagged
		return true
	}
	found, ok := store[id]
	if ok && string(found) == got { // flagged
		return true
	}
	return false
}

func harmless(c *channel, secret, sig []byte, tok, want string, err error) bool {
	if tok == "" || len(secret) == 0 || err != nil || c.Name == want || tok == kindToken || sig == nil {
		return false
	}
	return subtle.ConstantTimeCompare(secret, []byte(want)) == 1 && hmac.Equal(sig, []byte(tok))
}

// Harmless though a secret is near: a fixed prefix of the Authorization
// header, a header that names no secret, a verification's result, an
// inner variable that shadows a tainted one, a Redis hash tag.
func harmlessShapes(ctx *requestCtx, key, order, ct, id string) bool {
	const p = "Bearer "
	h := ctx.Request.Header.Peek("Authorization")
	if len(h) < len(p) || string(h[:len(p)]) != p || !bytes.HasPrefix(h, []byte(p)) {
		return false
	}
	if string(ctx.Request.Header.Peek("Content-Type")) == ct {
		return false
	}
	e := VerifySignature(key, order)
	if e != nil {
		return false
	}
	if e := lookupEvent(id); e == id {
		return true
	}
	return HashTag(id) == HashTag(order)
}

func VerifySignature(key, order string) error { return nil }
func lookupEvent(id string) string           { return id }
func HashTag(k string) string                { return k }
func hashOf(b []byte) string                 { return string(b) }
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	var want []int
	for i, l := range strings.Split(planted, "\n") {
		if strings.HasSuffix(l, "// flagged") {
			want = append(want, i+1)
		}
	}
	found := scanTimingUnsafe(t, dir)
	var lines []int
	for _, f := range found {
		// ".../p.go:15:5: tok == presented"
		parts := strings.SplitN(f[strings.LastIndex(f, "p.go:")+len("p.go:"):], ":", 2)
		n, _ := strconv.Atoi(parts[0])
		lines = append(lines, n)
	}
	if len(want) != 11 || !equalInts(lines, want) {
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
