package apierr

// statuses is every error code ticketd answers with and its HTTP status:
// interface.md's, decisions.md's and docs/decisions.md's. To add a code,
// add its line here (in its group) and build it with Of; codes_test.go
// fails for a code used anywhere in the code base that is missing here.
var statuses = map[string]int{
	// Requests and the server (docs/decisions.md).
	"INVALID_REQUEST":     400,
	"NOT_FOUND":           404,
	"METHOD_NOT_ALLOWED":  405,
	"REQUEST_TIMEOUT":     408,
	"PAYLOAD_TOO_LARGE":   413,
	"HEADERS_TOO_LARGE":   431,
	"RATE_LIMITED":        429,
	"INTERNAL":            500,
	"SERVICE_UNAVAILABLE": 503,
	"NOT_READY":           503,
	// An event whose sales are held after a loss ticketd could not repair
	// (docs/decisions.md, Durability and recovery): its sales stop until
	// an operator runs ticketctl release or reconcile; lost is the count.
	"SALES_HELD": 503,

	// Credentials: partner, storefront, admin.
	"MISSING_CREDENTIALS": 401,
	"INVALID_CREDENTIALS": 401,
	"INVALID_SESSION":     401,
	"MISSING_KEY":         401,
	"INVALID_KEY":         401,
	"ADMIN_UNAUTHORIZED":  401,
	"IP_NOT_ALLOWED":      403,
	"SCOPE_DENIED":        403,
	"ORIGIN_NOT_ALLOWED":  403,

	// Events.
	"EVENT_NOT_FOUND":     404,
	"EVENT_CANCELLED":     403,
	"EVENT_NOT_AVAILABLE": 403,
	"EVENT_NOT_PUBLIC":    403,

	// Buyer fields and idempotency.
	"INVALID_BUYER_NAME":       400,
	"INVALID_BUYER_EMAIL":      400,
	"INVALID_BUYER_PHONE":      400,
	"IDEMPOTENCY_KEY_REQUIRED": 400,
	"INVALID_IDEMPOTENCY_KEY":  400,
	"KEY_CONFLICT":             409,
	"DUPLICATE_IN_PROGRESS":    409,
	"BUYER_LIMIT_REACHED":      409,
	// Holding without paying (inventory/holds, inventory/registrations):
	// a client IP's unpaid registrations and seat hold tokens of an event
	// at TICKETD_HOLDS_PER_IP; a buyer's earlier registration paid while a
	// new one was made (the new one is refused, the tickets are on their way).
	"HOLD_LIMIT_REACHED":         409,
	"PREVIOUS_REGISTRATION_PAID": 409,

	// The waiting room (inventory/room, docs/decisions.md, The waiting
	// room): an event with one sells on the storefront only with a pass.
	"QUEUE_REQUIRED":      403,
	"QUEUE_NOT_OPEN":      403,
	"QUEUE_PASS_INVALID":  403,
	"QUEUE_PASS_EXPIRED":  403,
	"QUEUE_PASS_USED":     409,
	"QUEUE_SOLD_OUT":      409,
	"QUEUE_WORK_REQUIRED": 403,
	"QUEUE_WORK_INVALID":  403,
	// The admin queue read (GET /v1/admin/events/{eventId}/queue) of an
	// event whose catalog event has no waitingRoom.
	"NO_WAITING_ROOM": 404,

	// The cart (decisions.md §2, docs/decisions.md).
	"INVALID_QUANTITY":       400,
	"MAX_PER_ORDER_EXCEEDED": 400,
	"TICKET_NOT_FOUND":       400,
	"SHOWING_REQUIRED":       400,
	"SHOWING_NOT_FOUND":      400,
	"AREA_NOT_FOUND":         400,
	"TABLE_NOT_FOUND":        400,
	"EXTRA_NOT_FOUND":        400,
	"INVALID_DISCOUNT_CODE":  400,

	// Capacity.
	"TICKET_SOLD_OUT":                  409,
	"EVENT_SOLD_OUT":                   409,
	"QUANTITY_EXCEEDS_CAPACITY":        409,
	"TICKET_QUANTITY_EXCEEDS_CAPACITY": 409,
	"EXTRA_SOLD_OUT":                   409,
	"EXTRA_QUANTITY_EXCEEDS_CAPACITY":  409,

	// Seats (decisions.md §4 and §7).
	"NOT_SEATED":         400,
	"SEAT_NOT_FOUND":     400,
	"SEAT_NOT_PRICED":    400,
	"INVALID_HOLD_TOKEN": 400,
	"SEAT_CONFLICT":      409,
	"SEAT_NOT_HELD":      409,
	"HOLD_EXPIRED":       409,
	"SEAT_RULE":          409,

	// Confirm and payment. interface.md gives AMOUNT_MISMATCH 409 for a
	// partner's confirm and 400 for a storefront client's amount: the
	// table keeps the confirm's; ClientAmountMismatch is the other.
	"SIGNING_KEY_NOT_CONFIGURED": 401,
	"INVALID_SIGNATURE":          401,
	"NOT_PARTNER_REMIT":          403,
	"AMOUNT_MISMATCH":            409,
	"CONFIRM_FAILED":             409,
	"ACCRUAL_FAILED_RETRY":       503,
	// A checkout session asked for a registration that no longer awaits
	// payment (inventory/registrations; reason: paid, expired, refund,
	// too_many_sessions).
	"REGISTRATION_NOT_PAYABLE": 409,

	// Storefront payment calls (docs/decisions.md, Storefront surface).
	"CART_MISMATCH":           400,
	"PAYMENT_PROCESSOR_ERROR": 502,
	// No processor takes this method here (production mode).
	"PAYMENT_METHOD_UNAVAILABLE": 409,

	// Admin. ADMIN_DISABLED answers every method and path under
	// /v1/admin/ on a ticketd started without TICKETD_ADMIN_TOKEN.
	"INVALID_CATALOG": 400,
	"CATALOG_BUSY":    409,
	"ADMIN_DISABLED":  404,

	// Payment processors' webhooks (docs/payments.md); a bad signature is
	// INVALID_SIGNATURE above.
	// A payment of a session ticketd did not open for the registration,
	// or of another amount or currency (reason session, amount, currency).
	"PAYMENT_MISMATCH":    409,
	"WEBHOOK_STALE":       401,
	"WEBHOOK_IN_PROGRESS": 409,
	"WEBHOOK_REPLAYED":    409,
}

// ClientAmountMismatch is the storefront's AMOUNT_MISMATCH (interface.md,
// Storefront errors): the amount a client sent differs from the server's
// price, a 400 where a partner confirm's mismatch is a 409.
func ClientAmountMismatch(format string, args ...any) *Error {
	e := Of("AMOUNT_MISMATCH", format, args...)
	e.Status = 400
	return e
}
