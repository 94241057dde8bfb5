package mailer

import "testing"

// Two processes on hosts of one name with one pid (containers run as
// pid 1) still lease under different names.
func TestDefaultNamesDiffer(t *testing.T) {
	t.Parallel()
	a, b := (&Mailer{}).name(), (&Mailer{}).name()
	if a == b {
		t.Fatalf("two mailers are both named %q", a)
	}
}
