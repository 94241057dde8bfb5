package seats

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// HoldEntry is the value of a seat's entry in the event's seat holds or
// order seats hash (keys.Space.SeatHolds, OrderSeats) for holder
// ("h:<token>" or "o:<orderId>") until exp, as lua/lib/seatholds.lua
// writes it.
func HoldEntry(holder string, exp time.Time) string {
	return holder + " " + strconv.FormatInt(exp.UnixMilli(), 10)
}

// HolderAt is the holder such an entry names at now (ms, Redis time),
// "" when the value is empty or its hold expired: an expired entry is a
// free seat, as the scripts read it.
func HolderAt(v string, now int64) string {
	h, exp, _ := strings.Cut(v, " ")
	if ms, err := strconv.ParseInt(exp, 10, 64); err != nil || ms <= now {
		return ""
	}
	return h
}

// heldSeats is the set of seats held at now, from the replies of an
// HGETALL of the seat holds and order seats hashes and an HKEYS of the
// registration seats hash, in that order.
func heldSeats(res []rueidis.RedisResult, now int64) (map[string]bool, error) {
	held := map[string]bool{}
	for _, r := range res[:2] {
		m, err := r.AsStrMap()
		if err != nil {
			return nil, err
		}
		for l, v := range m {
			if HolderAt(v, now) != "" {
				held[l] = true
			}
		}
	}
	regs, err := res[2].AsStrSlice()
	if err != nil {
		return nil, err
	}
	for _, l := range regs {
		held[l] = true
	}
	return held, nil
}

// redisNow reads a TIME reply as ms.
func redisNow(m rueidis.RedisResult) (int64, error) {
	t, err := m.AsStrSlice()
	return timeMs(t, err)
}

// timeOf is redisNow of redis_time's reply, which is TIME's.
func timeOf(arr []rueidis.RedisMessage) (int64, error) {
	t := make([]string, 0, 2)
	for _, m := range arr {
		v, err := m.ToString()
		if err != nil {
			return 0, fmt.Errorf("TIME: %w", err)
		}
		t = append(t, v)
	}
	return timeMs(t, nil)
}

func timeMs(t []string, err error) (int64, error) {
	if err != nil || len(t) != 2 {
		return 0, fmt.Errorf("TIME: %v %v", t, err)
	}
	s, err1 := strconv.ParseInt(t[0], 10, 64)
	us, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("TIME: %v", t)
	}
	return s*1000 + us/1000, nil
}
