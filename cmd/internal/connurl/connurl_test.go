package connurl

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
)

// A typo beside a password must not put the password in the error that
// ticketd logs and ticketctl prints; what was wrong stays in it.
func TestParseErrorsLeaveThePasswordOut(t *testing.T) {
	for _, c := range []struct {
		name, url, secret, says string
		parse                   func(string) error
	}{
		{"redis, bad port", "redis://:s3cretpw@127.0.0.1:16x10", "s3cretpw", "invalid port", redisParse},
		{"redis, control character", "redis://:s3cretpw@127.0.0.1:6379/\x01", "s3cretpw", "invalid control character", redisParse},
		{"redis, bad escape in the password", "redis://:s3c%zzpw@127.0.0.1:6379", "%zz", "invalid %-escape", redisParse},
		{"postgres, '@' in the password", "postgres://postgres:pg@S3cret@127.0.0.1:54x2/db", "S3cret", "invalid port", pgParse},
		{"postgres, bad port", "postgres://postgres:s3cretpw@127.0.0.1:54x2/db", "s3cretpw", "invalid port", pgParse},
		{"postgres, bad pool setting", "postgres://postgres:s3cretpw@127.0.0.1:5432/db?pool_max_conns=x", "s3cretpw", "pool_max_conns", pgParse},
		{"postgres, keyword form", "host=127.0.0.1 port=x password=s3cretpw", "s3cretpw", "invalid port", pgParse},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.parse(c.url)
			if err == nil {
				t.Fatalf("%q parsed", c.url)
			}
			if msg := err.Error(); strings.Contains(msg, c.secret) || !strings.Contains(msg, c.says) {
				t.Fatalf("error %q: want %q in it and not the password", msg, c.says)
			}
		})
	}
}

func redisParse(u string) error {
	_, err := rueidis.ParseURL(u)
	if err == nil {
		return nil
	}
	return RedisError(err)
}

func pgParse(u string) error {
	_, err := pgxpool.ParseConfig(u)
	if err == nil {
		return nil
	}
	return PostgresError(err)
}

func TestRedactedHidesAPassword(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@127.0.0.1:8080":  "http://user:xxxxx@127.0.0.1:8080",
		"http://127.0.0.1:8080":          "http://127.0.0.1:8080",
		"http://user:pw@127.0.0.1:80x80": "(a URL that does not parse)",
	} {
		if got := Redacted(in); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
}
