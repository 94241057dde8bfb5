// Package tripbudget holds the round-trip budget test: every route ticketd
// serves, with the most Redis round trips one request of it may make
// (design rule 7: at most two), counted on the whole stack by
// inventory/roundtrips. It has no code of its own.
package tripbudget
