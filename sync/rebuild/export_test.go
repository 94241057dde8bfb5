package rebuild

// SetAfterRead sets a hook that runs between a rebuild's reads and its
// writes.
func SetAfterRead(r *Rebuilder, f func()) { r.afterRead = f }
