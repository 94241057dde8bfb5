package durable

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// AOF is what the incremental part of an append-only file holds: every
// command logged since the last rewrite, in bytes and calls by command.
// With appendfsync always each of these bytes is on the disk before the
// write that made it is answered.
type AOF struct {
	Calls map[string]int64
	Total int64
	bytes map[string]int64
}

// ReadAOF reads the incremental files of a Redis 7 multi-part AOF in
// dir/appendonlydir (the base, an RDB snapshot since the last rewrite, is
// left out). Scripts appear as the writes they made, wrapped in MULTI/EXEC.
func ReadAOF(dir string) (AOF, error) {
	files, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	if err != nil {
		return AOF{}, err
	}
	if len(files) == 0 {
		return AOF{}, fmt.Errorf("durable: no incremental AOF file in %s", dir)
	}
	a := AOF{Calls: map[string]int64{}, bytes: map[string]int64{}}
	for _, f := range files {
		if err := a.read(f); err != nil {
			return AOF{}, err
		}
	}
	return a, nil
}

func (a *AOF) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for {
		name, n, err := command(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// A command cut short at the end is one being written now.
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return fmt.Errorf("durable: %s: %w", path, err)
		}
		if name == "" {
			continue // an annotation line
		}
		a.bytes[name] += n
		a.Calls[name]++
		a.Total += n
	}
}

// command reads one RESP array of bulk strings and returns its command
// name (lower case) and length in bytes.
func command(r *bufio.Reader) (name string, n int64, err error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if line != "" && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", 0, err
	}
	n = int64(len(line))
	if !strings.HasPrefix(line, "*") {
		return "", n, nil // "#TS:..." annotations
	}
	argc, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return "", 0, fmt.Errorf("bad array header %q", line)
	}
	for i := range argc {
		h, err := r.ReadString('\n')
		if err != nil {
			return "", 0, io.ErrUnexpectedEOF
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(h, "$")))
		if err != nil || !strings.HasPrefix(h, "$") {
			return "", 0, fmt.Errorf("bad bulk header %q", h)
		}
		body := make([]byte, size+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return "", 0, io.ErrUnexpectedEOF
		}
		if i == 0 {
			name = strings.ToLower(string(body[:size]))
		}
		n += int64(len(h)) + int64(size+2)
	}
	return name, n, nil
}

// Breakdown lists the commands by bytes per unit, largest first, with
// their calls per unit: "hset 1,119 B (2.00)".
func (a AOF) Breakdown(units int64) string {
	if units <= 0 {
		return ""
	}
	names := make([]string, 0, len(a.bytes))
	for k := range a.bytes {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return a.bytes[names[i]] > a.bytes[names[j]] })
	var parts []string
	for _, k := range names {
		b := float64(a.bytes[k]) / float64(units)
		if b < 1 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s B (%.2f)", k, strconv.FormatFloat(b, 'f', 0, 64),
			float64(a.Calls[k])/float64(units)))
	}
	return strings.Join(parts, ", ")
}
