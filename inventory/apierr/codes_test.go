package apierr

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeUse finds a code where an error is built: apierr.Of("X", ...),
// apierr.Status("X") and apierr.Error{Code: "X"}. The Lua scripts' error
// replies become these in Go, so Go is where every code leaves.
var codeUse = regexp.MustCompile(`(?:apierr\.Of\(|apierr\.Status\(|\bOf\(|apierr\.Error\{[^}]*Code:\s*)"([A-Z][A-Z0-9_]+)"`)

// literalStatus is a status written by hand next to apierr: the table is
// the only place a status comes from.
var literalStatus = regexp.MustCompile(`apierr\.Error\{Status:\s*[0-9f]|apierr\.(New|BadRequest)\(`)

// TestEveryCodeInTable checks every code the code base builds is in the
// table, and no error takes its status from anywhere else, so a client
// never sees one code with two statuses.
func TestEveryCodeInTable(t *testing.T) {
	root := "../.."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("run from inventory/apierr:", err)
	}
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range codeUse.FindAllSubmatch(b, -1) {
			seen++
			if _, ok := statuses[string(m[1])]; !ok {
				t.Errorf("%s: code %s is not in apierr's table (codes.go)", path, m[1])
			}
		}
		if loc := literalStatus.FindIndex(b); loc != nil {
			t.Errorf("%s: a status given by hand (%q); build the error with apierr.Of", path, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Fatalf("found only %d code uses: the pattern no longer matches how errors are built", seen)
	}
}

func TestOfTakesTheTablesStatus(t *testing.T) {
	if e := Of("SEAT_CONFLICT", "x"); e.Status != 409 {
		t.Fatalf("SEAT_CONFLICT: status %d", e.Status)
	}
	if e := ClientAmountMismatch("x"); e.Status != 400 || e.Code != "AMOUNT_MISMATCH" {
		t.Fatalf("client amount mismatch: %+v", e)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an unknown code must panic")
		}
	}()
	Of("NO_SUCH_CODE", "x")
}
