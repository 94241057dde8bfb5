package payments

import "github.com/ticketd/ticketd/inventory/money"

// EventCheckoutCompleted is the card webhook's (and Stripe's) event type of
// a completed checkout.
const EventCheckoutCompleted = "checkout.session.completed"

// CardWebhook is the card processor's webhook body (decisions.md section 4).
type CardWebhook struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		Object CardSession `json:"object"`
	} `json:"data"`
}

// CardSession is the checkout session a card webhook reports.
type CardSession struct {
	ID                string `json:"id"`
	PaymentStatus     string `json:"payment_status"`
	AmountTotal       int64  `json:"amount_total"` // cents
	Currency          string `json:"currency"`
	ClientReferenceID string `json:"client_reference_id"`
}

// WalletWebhook is the wallet provider's callback body: amount is a JSON
// number in dollars with at most two decimals.
type WalletWebhook struct {
	ID        string      `json:"id"`
	Status    string      `json:"status"`
	Amount    money.Cents `json:"amount"`
	Currency  string      `json:"currency"`
	Reference string      `json:"reference"`
}
