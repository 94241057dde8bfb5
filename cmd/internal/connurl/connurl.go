// Package connurl keeps the passwords of REDIS_URL and DATABASE_URL out of
// the errors and log lines that name them. Go's url.Parse repeats the
// whole URL in its error, and pgx hides a password only up to its first
// '@', so an operator's typo in a port would otherwise put the password
// in ticketd's log.
package connurl

import (
	"errors"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// RedisError is rueidis.ParseURL's error without the URL it could not
// parse.
func RedisError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	var ee url.EscapeError // names the escape, which may be in the password
	if errors.As(ue.Err, &ee) {
		return errors.New("invalid %-escape in the URL")
	}
	return ue.Err
}

// PostgresError is a pgx error without the connection string it could not
// parse: what was wrong ("invalid port"), and why when pgx says, never the
// string itself. Other errors are returned as they are (pgx names a
// server it could not reach by host and port only).
func PostgresError(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return err
	}
	// pe.Error() is "cannot parse `<string>`: <what> (<why>)"; its string
	// is cut off at the last "`: ", after any the password holds.
	what := pe.Error()
	why := errors.Unwrap(pe)
	if why != nil {
		what = strings.TrimSuffix(what, " ("+why.Error()+")")
	}
	if i := strings.LastIndex(what, "`: "); i >= 0 {
		what = what[i+len("`: "):]
	} else {
		what = "not a valid connection string"
	}
	msg := "cannot parse the connection string: " + what
	if why != nil {
		msg += " (" + RedisError(why).Error() + ")" // a url.Error repeats the URL too
	}
	return errors.New(msg)
}

// Redacted is raw with its password, if it has one, as "xxxxx": for a log
// line that names a URL an operator gave.
func Redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return "(a URL that does not parse)"
		}
		return raw
	}
	return u.Redacted()
}
