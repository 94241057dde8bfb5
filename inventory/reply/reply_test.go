package reply

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/ticketd/ticketd/inventory/eval"
)

// luaCodes reads the table of lua/lib/reply.lua (the embedded lua.Files):
// name -> number.
func luaCodes(t *testing.T) map[string]int64 {
	t.Helper()
	codes, err := eval.ReplyCodes()
	if err != nil {
		t.Fatal(err)
	}
	return codes
}

// goCodes reads the constants of type Code declared in reply.go: Go name
// -> number, from the source, so that a constant missing from names is
// found too.
func goCodes(t *testing.T) map[string]int64 {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reply.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int64{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, name := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("reply.go: %s is not a number literal", name.Name)
				}
				n, err := strconv.ParseInt(lit.Value, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				codes[name.Name] = n
			}
		}
	}
	return codes
}

// snake is a Go name as lib/reply.lua spells it: HoldGone -> HOLD_GONE.
func snake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && unicode.IsLower(r[i-1]) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(c))
	}
	return b.String()
}

// The Lua table and the Go one are the same codes: every name on one side
// is on the other with the same number, and String names each as Lua does.
func TestGoCodesAreLuaCodes(t *testing.T) {
	lc, gc := luaCodes(t), goCodes(t)
	if len(lc) == 0 || len(gc) == 0 {
		t.Fatalf("no codes read: Lua %d, Go %d", len(lc), len(gc))
	}
	for _, d := range differences(lc, gc) {
		t.Error(d)
	}
	for gname, n := range gc {
		if got, want := Code(n).String(), snake(gname); got != want {
			t.Errorf("Go %s: String() = %q, want %q", gname, got, want)
		}
	}
	if len(names) != len(gc) {
		t.Errorf("names has %d codes, reply.go declares %d", len(names), len(gc))
	}
}

// differences compares the Lua table lc with the Go constants gc.
func differences(lc, gc map[string]int64) []string {
	var out []string
	seen := map[string]bool{}
	for gname, n := range gc {
		lname := snake(gname)
		seen[lname] = true
		if ln, ok := lc[lname]; !ok {
			out = append(out, fmt.Sprintf("Go %s (%d) has no %s in lib/reply.lua", gname, n, lname))
		} else if ln != n {
			out = append(out, fmt.Sprintf("%s is %d in lib/reply.lua, Go %s is %d", lname, ln, gname, n))
		}
	}
	for lname, n := range lc {
		if !seen[lname] {
			out = append(out, fmt.Sprintf("lib/reply.lua %s (%d) has no Go constant", lname, n))
		}
	}
	return out
}

// The comparison finds a code missing on either side and a number that
// differs.
func TestDifferencesAreFound(t *testing.T) {
	go1 := map[string]int64{"OK": 0, "HoldGone": 3}
	for name, lc := range map[string]map[string]int64{
		"Lua lacks one":  {"OK": 0},
		"Go lacks one":   {"OK": 0, "HOLD_GONE": 3, "STOPPED": 7},
		"another number": {"OK": 0, "HOLD_GONE": 4},
	} {
		if len(differences(lc, go1)) == 0 {
			t.Errorf("%s: no difference found", name)
		}
	}
	if d := differences(map[string]int64{"OK": 0, "HOLD_GONE": 3}, go1); len(d) != 0 {
		t.Errorf("same tables: %v", d)
	}
}
