package redistest

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Snapshot copies the server's data files (its AOF directory and any RDB;
// not its log) while it runs, as a backup or a replica's older copy would
// hold them, and returns where. With appendfsync always every write the
// server answered is in the files when copied; a command half written at
// that moment is dropped when the copy is loaded (aof-load-truncated).
func (s *Server) Snapshot() string {
	s.t.Helper()
	dst := s.t.TempDir()
	if err := copyData(s.Dir, dst); err != nil {
		s.t.Fatalf("redistest: snapshot: %v", err)
	}
	return dst
}

// Restore replaces the server's data files with a Snapshot's, so the next
// Start comes back from that older state (a rollback). The server must be
// killed first.
func (s *Server) Restore(snapshot string) {
	s.t.Helper()
	s.Wipe()
	if err := copyData(snapshot, s.Dir); err != nil {
		s.t.Fatalf("redistest: restore: %v", err)
	}
}

// copyData copies every file under from but the log to to.
func copyData(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil || rel == "redis.log" {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
}
