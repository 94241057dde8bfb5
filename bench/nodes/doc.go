// Package nodes holds the scale-out fault tests of issue 11 (build tag
// reliability, run by make reliability): several ticketd processes — three
// API nodes and a separate sync worker, built and started with bench/procs
// — on one Redis and one Postgres database of the test's own, under the
// partner's and the storefront's contention load, with nodes killed
// (SIGKILL) in the middle of it.
package nodes
