package redisstate

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// What a Redis crash would lose of acknowledged sales.
const (
	LosesNothing    = "nothing"    // AOF with appendfsync always
	LosesSecond     = "second"     // AOF with appendfsync everysec: up to a second
	LosesEverything = "everything" // no AOF (at best back to the last snapshot), or appendfsync no
	LosesUnknown    = "unknown"    // the settings could not be read
)

// Durability is what the Redis server's persistence settings promise.
type Durability struct {
	Loses string // one of the Loses* levels
	// Settings describes what it was read from, for the log
	// ("appendonly yes, appendfsync always").
	Settings string
}

// Describe says in words what a crash would lose.
func (d Durability) Describe() string {
	switch d.Loses {
	case LosesNothing:
		return "a Redis crash loses no acknowledged sale"
	case LosesSecond:
		return "a Redis crash loses up to one second of acknowledged sales"
	case LosesEverything:
		return "a Redis crash loses every sale since its last snapshot, or all of them"
	}
	return "what a Redis crash would lose is unknown"
}

// ReadDurability reads the persistence settings of every Redis master ticketd
// writes to (one for a single Redis, each master of a Redis Cluster) and
// returns the weakest: a sale is as safe as the node that holds it, and a
// cluster places each event on one master, so the weakest master is what
// some sales get. Settings names each master's when there are several.
func ReadDurability(ctx context.Context, rc rueidis.Client) (Durability, error) {
	masters, err := Masters(ctx, rc)
	if err != nil {
		return Durability{Loses: LosesUnknown}, err
	}
	if len(masters) == 1 {
		for _, n := range masters {
			return readNodeDurability(ctx, n)
		}
	}
	var weakest Durability
	var settings []string
	for _, addr := range sortedAddrs(masters) {
		d, err := readNodeDurability(ctx, masters[addr])
		if err != nil {
			return Durability{Loses: LosesUnknown}, fmt.Errorf("%s: %w", addr, err)
		}
		if weakest.Loses == "" || lossRank[d.Loses] > lossRank[weakest.Loses] {
			weakest.Loses = d.Loses
		}
		settings = append(settings, addr+": "+d.Settings)
	}
	weakest.Settings = strings.Join(settings, "; ")
	return weakest, nil
}

// lossRank orders the levels from the safest to the weakest. "unknown"
// ranks just short of "everything": a node known to lose everything is
// worse than one whose fsync setting could not be read (its AOF is on).
var lossRank = map[string]int{LosesNothing: 0, LosesSecond: 1, LosesUnknown: 2, LosesEverything: 3}

// readNodeDurability reads one server's persistence settings. CONFIG GET
// says everything; where CONFIG is not allowed (managed Redis often
// renames it), INFO persistence still tells whether AOF is on.
func readNodeDurability(ctx context.Context, rc rueidis.Client) (Durability, error) {
	res := rc.DoMulti(ctx,
		rc.B().ConfigGet().Parameter("appendonly").Build(),
		rc.B().ConfigGet().Parameter("appendfsync").Build())
	aof, err1 := configValue(res[0])
	fsync, err2 := configValue(res[1])
	err := cmp.Or(err1, err2)
	if err == nil {
		return durabilityOf(aof == "yes", fsync), nil
	}
	if _, ok := rueidis.IsRedisErr(err); !ok {
		return Durability{Loses: LosesUnknown}, fmt.Errorf("redisstate: read persistence settings: %w", err)
	}
	info, err := rc.Do(ctx, rc.B().Info().Section("persistence").Build()).ToString()
	if err != nil {
		return Durability{Loses: LosesUnknown}, fmt.Errorf("redisstate: read persistence settings: %w", err)
	}
	if infoField(info, "aof_enabled") == "1" {
		return Durability{Loses: LosesUnknown, Settings: "appendonly yes, appendfsync not readable (CONFIG is not allowed)"}, nil
	}
	return durabilityOf(false, ""), nil
}

func durabilityOf(aof bool, fsync string) Durability {
	if !aof {
		return Durability{Loses: LosesEverything, Settings: "appendonly no"}
	}
	d := Durability{Settings: "appendonly yes, appendfsync " + fsync}
	switch fsync {
	case "always":
		d.Loses = LosesNothing
	case "everysec":
		d.Loses = LosesSecond
	default: // "no": the kernel writes when it likes, typically within 30 s
		d.Loses = LosesEverything
	}
	return d
}

// configValue reads a CONFIG GET reply (a map in RESP3, a pair list in RESP2).
func configValue(r rueidis.RedisResult) (string, error) {
	m, err := r.AsStrMap()
	if err != nil {
		return "", err
	}
	for _, v := range m {
		return v, nil
	}
	return "", fmt.Errorf("empty CONFIG GET reply")
}

// infoField returns one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
