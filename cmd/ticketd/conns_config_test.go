package main

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/connlimit"
	"github.com/ticketd/ticketd/handlers/server"
)

// The connection settings (README, Configuration): their defaults, and a
// refusal naming the variable for a value ticketd cannot use.
func TestLoadConnConfig(t *testing.T) {
	vars := []string{"TICKETD_MAX_CONNS", "TICKETD_MAX_CONNS_PER_IP", "TICKETD_CONN_LIMIT_EXEMPT", "TICKETD_BODY_MEMORY_MB"}
	set := func(t *testing.T, kv map[string]string) {
		for _, v := range vars {
			t.Setenv(v, kv[v])
		}
	}
	t.Run("defaults", func(t *testing.T) {
		set(t, nil)
		c, err := loadConnConfig()
		if err != nil {
			t.Fatal(err)
		}
		want := connConfig{MaxConnsPerIP: connlimit.DefaultPerIP, BodyMemory: server.DefaultBodyMemory}
		if c.MaxConns != want.MaxConns || c.MaxConnsPerIP != want.MaxConnsPerIP || c.BodyMemory != want.BodyMemory || len(c.Exempt) != 0 {
			t.Fatalf("defaults %+v, want %+v", c, want)
		}
	})
	t.Run("set", func(t *testing.T) {
		set(t, map[string]string{"TICKETD_MAX_CONNS": "5000", "TICKETD_MAX_CONNS_PER_IP": "0",
			"TICKETD_CONN_LIMIT_EXEMPT": "10.0.0.0/8, 192.0.2.7,::ffff:10.1.0.0/112", "TICKETD_BODY_MEMORY_MB": "8"})
		c, err := loadConnConfig()
		if err != nil {
			t.Fatal(err)
		}
		exempt := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("10.1.0.0/16")}
		if c.MaxConns != 5000 || c.MaxConnsPerIP != 0 || c.BodyMemory != 8<<20 || !slices.Equal(c.Exempt, exempt) {
			t.Fatalf("got %+v", c)
		}
	})
	for _, tc := range []struct{ name, value string }{
		{"TICKETD_MAX_CONNS", "0"},
		{"TICKETD_MAX_CONNS", "many"},
		{"TICKETD_MAX_CONNS_PER_IP", "-1"},
		{"TICKETD_BODY_MEMORY_MB", "0"},
		{"TICKETD_BODY_MEMORY_MB", "32MB"},
		{"TICKETD_CONN_LIMIT_EXEMPT", "10.0.0.0/33"},
		{"TICKETD_CONN_LIMIT_EXEMPT", "lb.example.com"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			set(t, map[string]string{tc.name: tc.value})
			if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("want an error naming %s, got %v", tc.name, err)
			}
		})
	}
}
