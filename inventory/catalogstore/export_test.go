package catalogstore

// SetAfterCheck sets the hook Apply runs between its sold-count checks
// and its capacity scripts.
func SetAfterCheck(s *Store, f func()) { s.afterCheck = f }
