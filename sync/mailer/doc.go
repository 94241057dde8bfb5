// Package mailer sends the e-mails of the outbox table: the buyer's tickets
// (buyer_tickets), the host's notice of a new storefront registration
// (host_notify) and of a payment to refund (host_refund). The sync worker
// writes buyer and host rows in the paid order's own transaction;
// registrations write refund rows. UNIQUE (order_id, kind, ref) makes each
// one row however often an order is written, so each is mailed once; ref
// is empty but for host_refund, one row per payment to refund (its id).
//
// Several mailer processes may run against one database: a mailer claims
// due rows (FOR UPDATE SKIP LOCKED) and leases them (locked_until), so no
// two send one row at once; a row whose holder died is due again when its
// lease runs out. Each message is rendered from Postgres (the order, its
// lines and tickets, the event's name), with one signed QR image per
// ticket, and sent over SMTP (TICKETD_SMTP_URL) or written as an .eml file
// into a folder (TICKETD_MAIL_DIR). A failed send is retried with
// exponential backoff, its error kept in last_error (logs get the SMTP
// stage and reply code only: the reply may quote the address); a refused
// recipient or message (a 5xx reply to RCPT TO or to the end of DATA), or
// the last attempt, gives the row up (failed_at). A failure of the server
// or the configuration (unreachable, TLS, AUTH, MAIL FROM, a 5xx at any of
// those) gives nothing up: the batch stops, the rows not begun are handed
// back, and the mailer waits, doubling the wait while it lasts. A row that
// panics is recorded as a failure; one whose claims ran out with no
// outcome (its mailer died or hung each time) is given up.
//
// Mail is bounded (rate.go, render.go): one buyer address gets at most
// PerHour messages an hour, the rest wait for a free slot (never dropped),
// and a message is at most MaxBytes: a large order links its ticket page
// instead of carrying a QR image per ticket.
//
// Delivery is at least once: a mailer that dies after the SMTP server
// accepted a message but before it marked the row sent sends it again when
// the lease runs out. The Message-ID is the same both times
// (<outbox id>.<order id>@ticketd), so a mail client may fold the two.
package mailer
