package main

import (
	"fmt"
	"io"
)

// printDemo prints the demo credentials and three curl lines that work as
// pasted, in order, into one shell (the second sets ORDER and AMOUNT).
func printDemo(w io.Writer, cfg config) {
	base := cfg.AppURL
	hdr := `-H 'x-service-key: ck_demo' -H 'x-service-secret: cs_demo_secret'`
	fmt.Fprintf(w, `
================ ticketd demo ================
channel key      ck_demo
channel secret   cs_demo_secret
signing key      sk_demo_signing
publishable key  pk_demo (storefront pages on localhost, 127.0.0.1; README: The storefront flow)
events           ev_demo_ga (GA), ev_demo_seated (seat map)
admin token      %s

# 1. the partner catalog
curl -s %s %s/v1/channel/events

# 2. reserve one General ticket (sets ORDER and AMOUNT for line 3)
eval "$(curl -s %s -H 'Content-Type: application/json' -H "Idempotency-Key: $(date +%%s%%N)" -d '{"buyerName":"Ada Lovelace","buyerEmail":"ada@example.com","selectedTicketId":"tk_general","quantity":1}' %s/v1/channel/events/ev_demo_ga/checkout | sed -E 's/.*"orderId":"([^"]+)".*"amount":([0-9.]+).*/ORDER=\1 AMOUNT=\2/')"; echo "order $ORDER amount $AMOUNT"

# 3. confirm it with the signed request (HMAC-SHA256 over orderId.amount.USD.partnerReference)
curl -s %s -H 'Content-Type: application/json' -H "x-service-signature: $(printf '%%s' "$ORDER.$AMOUNT.USD.demo-ref-1" | openssl dgst -sha256 -hmac sk_demo_signing | sed 's/^.* //')" -d "{\"orderId\":\"$ORDER\",\"amount\":$AMOUNT,\"partnerReference\":\"demo-ref-1\"}" %s/v1/channel/orders/confirm
==============================================
`, adminShown(cfg.AdminToken), hdr, base, hdr, base, hdr, base)
}

func adminShown(tok string) string {
	if tok == "" {
		return "(TICKETD_ADMIN_TOKEN not set: admin surface off)"
	}
	return "(from TICKETD_ADMIN_TOKEN)"
}
