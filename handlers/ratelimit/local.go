package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// DefaultLocalKeys is how many buckets a Local keeps at most when its
// MaxKeys is not set: about 6 MB of memory at worst, and more client
// addresses than one node serves at once in an on-sale of 100,000 buyers
// (most of whose buckets are full, so dropping them loses nothing).
const DefaultLocalKeys = 1 << 16

// localShards spreads the buckets over locks, so that the polls of two
// cores rarely wait on each other.
const localShards = 32

// evictSample is how many buckets a full shard looks at to make room.
const evictSample = 8

// Local is the same GCRA as Limiter (burst perMinute, then one every
// minute/perMinute), counted in this node's memory alone: for requests the
// node answers without Redis (the waiting room's far polls), so that they
// cost Redis nothing while a caller over its limit is still refused. Each
// node counts its own share: behind a balancer that spreads one caller
// over N nodes, it gets up to N times the limit. The zero value is ready
// to use; it is safe for concurrent use.
//
// Memory is bounded by MaxKeys buckets. A bucket that has refilled is as
// good as none and is dropped when room is needed; when none of a sample
// has, the one nearest to full goes, so a flood of new callers can give a
// little back to a caller that was nearly full, while the caller hammering
// (its bucket far from full) is the last to lose its count.
type Local struct {
	// MaxKeys bounds the buckets kept (0: DefaultLocalKeys).
	MaxKeys int
	// Now is the clock (nil: time.Now), for tests.
	Now func() time.Time

	once   sync.Once
	seed   maphash.Seed
	base   time.Time
	shards [localShards]localShard
}

type localShard struct {
	mu sync.Mutex
	// tat is each bucket's theoretical arrival time: when it is full
	// again, in nanoseconds since base.
	tat map[string]int64
}

func (l *Local) init() {
	l.seed = maphash.MakeSeed()
	l.base = l.now()
	for i := range l.shards {
		l.shards[i].tat = make(map[string]int64)
	}
}

func (l *Local) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Local) perShard() int {
	n := l.MaxKeys
	if n <= 0 {
		n = DefaultLocalKeys
	}
	return max(1, n/localShards)
}

// Allow takes one request from bucket, which allows perMinute requests a
// minute; the Result reads as Limiter's (RetryAfter for the 429). A limit
// of zero or less allows everything and keeps nothing.
func (l *Local) Allow(bucket string, perMinute int64) Result {
	if perMinute <= 0 {
		return unlimited
	}
	l.once.Do(l.init)
	// The interval is rounded up, as the script does, so that rounding
	// never lets more than perMinute through in a minute.
	interval := (int64(time.Minute) + perMinute - 1) / perMinute
	now := int64(l.now().Sub(l.base))
	sh := &l.shards[maphash.String(l.seed, bucket)%localShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tat, ok := sh.tat[bucket]
	if !ok || tat < now {
		tat = now
	}
	// ahead is how far the bucket is from full, in whole intervals
	// rounded up; burst-ahead requests fit now.
	ahead := (tat - now + interval - 1) / interval
	if ahead >= perMinute {
		return Result{RetryAfter: time.Duration(tat + interval - interval*perMinute - now)}
	}
	if !ok && len(sh.tat) >= l.perShard() {
		sh.evict(now)
	}
	sh.tat[bucket] = tat + interval
	return Result{Allowed: true, Remaining: perMinute - ahead - 1}
}

// evict makes room for one bucket (sh.mu held): the buckets of a sample
// that have refilled, or else the sample's nearest to full.
func (sh *localShard) evict(now int64) {
	victim, least, seen, freed := "", int64(0), 0, false
	// A map's range starts at a random place: the sample is a random one.
	for k, tat := range sh.tat {
		if tat <= now {
			delete(sh.tat, k)
			freed = true
		} else if victim == "" || tat < least {
			victim, least = k, tat
		}
		if seen++; seen == evictSample {
			break
		}
	}
	if !freed && victim != "" {
		delete(sh.tat, victim)
	}
}

// Len is how many buckets the limiter keeps now.
func (l *Local) Len() int {
	l.once.Do(l.init)
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.tat)
		sh.mu.Unlock()
	}
	return n
}
