package eval

// For the tests of package eval_test (which may import redistest, which
// imports eval).
var (
	LibraryOf = library
	NoWrites  = noWrites
)
