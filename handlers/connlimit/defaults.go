package connlimit

// DefaultPerIP is the per-address cap when TICKETD_MAX_CONNS_PER_IP is
// unset: above what one load generator or partner server opens (the
// bench's open loop keeps up to 1,032 connections), far below the total,
// so that one address cannot hold a node's every connection.
const DefaultPerIP = 2048

// unknownFileLimit is the total cap's base where the file descriptor
// limit cannot be read.
const unknownFileLimit = 10_000

// DefaultTotal is the total cap when TICKETD_MAX_CONNS is unset, for a
// process allowed nofile file descriptors (RLIMIT_NOFILE; 0: unknown). It
// keeps a tenth of them, at least 256 (half, below 512), for what is not a
// client connection: Redis and Postgres pools, the demo shop, outgoing
// webhooks, Stripe and SMTP, the log and mail files. A connection over the
// cap is closed at once rather than left to make accept fail.
func DefaultTotal(nofile uint64) int {
	if nofile == 0 {
		nofile = unknownFileLimit
	}
	reserve := max(min(256, nofile/2), nofile/10)
	return int(nofile - reserve)
}
