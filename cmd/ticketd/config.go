package main

import (
	"fmt"
	"os"
	"time"
)

// config is ticketd's environment (decisions.md §5).
type config struct {
	Addr           string
	AppURL         string
	RedisURL       string
	RedisURLSet    bool
	DatabaseURL    string
	DatabaseURLSet bool
	AdminToken     string
	SecretsKey     string
	KeyPrefix      string
	TrustedProxies string
	OrderTTL       time.Duration
	CheckoutTTL    time.Duration
	SeatHoldTTL    time.Duration
	LogFormat      string
	PprofAddr      string
	// RedisFlushDelay is rueidis' MaxFlushDelay (TICKETD_REDIS_FLUSH_DELAY).
	RedisFlushDelay time.Duration
}

func env(name, def string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v, true
	}
	return def, false
}

func loadConfig() (config, error) {
	var c config
	c.Addr, _ = env("TICKETD_ADDR", ":8080")
	c.AppURL, _ = env("TICKETD_APP_URL", "http://localhost:8080")
	c.RedisURL, c.RedisURLSet = env("REDIS_URL", "redis://127.0.0.1:6379")
	c.DatabaseURL, c.DatabaseURLSet = env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
	c.AdminToken, _ = env("TICKETD_ADMIN_TOKEN", "")
	c.SecretsKey, _ = env("TICKETD_SECRETS_KEY", "")
	c.KeyPrefix, _ = env("TICKETD_KEY_PREFIX", "")
	c.TrustedProxies, _ = env("TICKETD_TRUSTED_PROXIES", "")
	c.LogFormat, _ = env("TICKETD_LOG_FORMAT", "text")
	c.PprofAddr, _ = env("TICKETD_PPROF_ADDR", "")
	for _, d := range []struct {
		name string
		dst  *time.Duration
		def  time.Duration
	}{
		{"TICKETD_ORDER_TTL", &c.OrderTTL, 30 * time.Minute},
		{"TICKETD_CHECKOUT_TTL", &c.CheckoutTTL, 15 * time.Minute},
		{"TICKETD_SEAT_HOLD_TTL", &c.SeatHoldTTL, 10 * time.Minute},
		{"TICKETD_REDIS_FLUSH_DELAY", &c.RedisFlushDelay, 20 * time.Microsecond},
	} {
		v, set := env(d.name, "")
		if !set {
			*d.dst = d.def
			continue
		}
		p, err := time.ParseDuration(v)
		if err != nil || p <= 0 {
			return c, fmt.Errorf("%s=%q: want a positive duration such as 30m", d.name, v)
		}
		*d.dst = p
	}
	return c, nil
}
