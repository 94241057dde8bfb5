package connlimit

// DefaultPerIP is the per-address cap when TICKETD_MAX_CONNS_PER_IP is
// unset: above what one load generator or partner server opens (the
// bench's open loop keeps up to 1,032 connections), far below the total,
// so that one address cannot hold a node's every connection.
const DefaultPerIP = 2048

// unknownFileLimit is the total cap's base where the file descriptor
// limit cannot be read.
const unknownFileLimit = 10_000

// MaxDefaultTotal bounds the default total cap by memory where no memory
// limit is known: 50,000 connections at PerConnMemory is about 2 GB.
// The file descriptor limit alone bounds descriptors, not memory: at a
// limit of 1,048,576 it allowed 943,718 connections, about 20 GB.
const MaxDefaultTotal = 50_000

// DefaultTotal is the total cap when TICKETD_MAX_CONNS is unset, for a
// process allowed nofile file descriptors (RLIMIT_NOFILE; 0: unknown) and
// memory bytes (the cgroup's limit, MemoryLimit; 0: unknown).
//
// By descriptors, it keeps a tenth of them, at least 256 (half, below
// 512), for what is not a client connection: Redis and Postgres pools,
// the demo shop, outgoing webhooks, Stripe and SMTP, the log and mail
// files. By memory, it lets open connections take at most half of the
// memory limit at PerConnMemory each (the other half is the heap, the
// body budget and the garbage between collections), and at most
// MaxDefaultTotal without one. A connection over the cap is closed at
// once rather than left to make accept fail or the process run out of
// memory.
func DefaultTotal(nofile, memory uint64) int {
	if nofile == 0 {
		nofile = unknownFileLimit
	}
	reserve := max(min(256, nofile/2), nofile/10)
	total := min(int(nofile-reserve), MaxDefaultTotal)
	if memory > 0 {
		total = min(total, max(1, int(memory/2/PerConnMemory)))
	}
	return total
}
