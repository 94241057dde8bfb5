// Package redismem measures what keys cost in Redis, two ways: the sum of
// MEMORY USAGE (exact per key, SAMPLES 0) over a set of keys, and
// used_memory from INFO memory (everything the server holds, so on a
// shared Redis it also moves with other clients' keys). It also reads
// INFO fields and deletes a bench run's key space.
package redismem

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/redisstate"
)

// chunk bounds the commands of one pipelined round trip.
const chunk = 500

// Scan returns every key matching pattern (a Redis glob), on every master
// of a Redis Cluster (SCAN sees only the node it is sent to).
func Scan(ctx context.Context, rc rueidis.Client, pattern string) ([]string, error) {
	masters, err := redisstate.Masters(ctx, rc)
	if err != nil {
		return nil, fmt.Errorf("redismem: scan %s: %w", pattern, err)
	}
	var out []string
	for _, n := range masters {
		var cursor uint64
		for {
			e, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				return nil, fmt.Errorf("redismem: scan %s: %w", pattern, err)
			}
			out = append(out, e.Elements...)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return out, nil
}

// Usage returns the sum of MEMORY USAGE over keys; absent keys count 0.
func Usage(ctx context.Context, rc rueidis.Client, keys []string) (int64, error) {
	var sum int64
	for i := 0; i < len(keys); i += chunk {
		part := keys[i:min(i+chunk, len(keys))]
		cmds := make(rueidis.Commands, len(part))
		for j, k := range part {
			cmds[j] = rc.B().MemoryUsage().Key(k).Samples(0).Build()
		}
		for j, r := range rc.DoMulti(ctx, cmds...) {
			n, err := r.AsInt64()
			if rueidis.IsRedisNil(err) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("redismem: memory usage %s: %w", part[j], err)
			}
			sum += n
		}
	}
	return sum, nil
}

// UsedMemory returns used_memory of INFO memory, in bytes, summed over
// every master of a Redis Cluster.
func UsedMemory(ctx context.Context, rc rueidis.Client) (int64, error) {
	masters, err := redisstate.Masters(ctx, rc)
	if err != nil {
		return 0, fmt.Errorf("redismem: %w", err)
	}
	var sum int64
	for _, n := range masters {
		v, err := InfoField(ctx, n, "memory", "used_memory")
		if err != nil {
			return 0, err
		}
		b, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("redismem: used_memory %q: %w", v, err)
		}
		sum += b
	}
	return sum, nil
}

// InfoField returns the value of field in section of INFO.
func InfoField(ctx context.Context, rc rueidis.Client, section, field string) (string, error) {
	fields, err := Info(ctx, rc, section)
	if err != nil {
		return "", err
	}
	v, ok := fields[field]
	if !ok {
		return "", fmt.Errorf("redismem: info %s has no %s", section, field)
	}
	return v, nil
}

// Info returns the fields of the given sections of INFO, name to value.
func Info(ctx context.Context, rc rueidis.Client, sections ...string) (map[string]string, error) {
	info, err := rc.Do(ctx, rc.B().Info().Section(sections...).Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("redismem: info %s: %w", strings.Join(sections, " "), err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// DeletePrefix unlinks every key that starts with prefix and returns how
// many there were. prefix must not be empty: it never deletes a whole Redis.
func DeletePrefix(ctx context.Context, rc rueidis.Client, prefix string) (int, error) {
	if prefix == "" {
		return 0, fmt.Errorf("redismem: refusing to delete with an empty prefix")
	}
	keys, err := Scan(ctx, rc, Glob(prefix)+"*")
	if err != nil {
		return 0, err
	}
	// One UNLINK per key, pipelined: the keys lie in many slots, and a
	// Redis Cluster takes a multi-key command only within one.
	for i := 0; i < len(keys); i += chunk {
		part := keys[i:min(i+chunk, len(keys))]
		cmds := make(rueidis.Commands, len(part))
		for j, k := range part {
			cmds[j] = rc.B().Unlink().Key(k).Build()
		}
		for _, r := range rc.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return i, fmt.Errorf("redismem: unlink: %w", err)
			}
		}
	}
	return len(keys), nil
}

// Glob quotes the glob characters of s, for the literal part of a SCAN
// MATCH pattern.
func Glob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
