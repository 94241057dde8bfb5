package mailer

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
)

// storable makes a string acceptable to a Postgres text column (valid
// UTF-8, no NUL), for errors that quote what a server said.
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// Each message has a text and an HTML template of one name.
var (
	textTemplates = texttemplate.Must(texttemplate.New("").Parse(`
{{- define "buyer" -}}
Hello {{.BuyerName}},

{{if .Inline -}}
thank you for your order {{.Ref}}. Here are your tickets for
{{.EventName}}{{if .When}}, {{.When}}{{end}}.

{{range .Tickets}}  Ticket {{.N}}: {{.Label}} ({{.ID}})
    code {{.Code}}
{{end}}
Total paid: {{.Total}}
Order reference {{.Ref}} (order id {{.OrderID}})

Show each ticket's QR code at the door, on your phone or printed. Your
tickets, to view or print at any time:
{{.PageURL}}
{{- else -}}
thank you for your order {{.Ref}}. Your {{.Count}} tickets for
{{.EventName}}{{if .When}}, {{.When}}{{end}}, each with its QR code, are on
your ticket page, to view or print at any time:
{{.PageURL}}
{{if .List}}
{{range .Tickets}}  Ticket {{.N}}: {{.Label}} ({{.ID}})
{{end}}{{end}}
Total paid: {{.Total}}
Order reference {{.Ref}} (order id {{.OrderID}})

Show each ticket's QR code at the door, on your phone or printed.
{{- end}}

{{.TenantName}}
{{- end}}

{{- define "host" -}}
New registration for {{.EventName}}{{if .When}} ({{.When}}){{end}}

Buyer:   {{.BuyerName}} <{{.BuyerEmail}}>{{if .BuyerPhone}}, {{.BuyerPhone}}{{end}}
Order:   {{.Ref}} ({{.OrderID}})
Amount:  {{.Total}}
Tickets: {{.Count}}
{{range .Tickets}}  {{.Label}} ({{.ID}})
{{end -}}
{{- end}}

{{- define "refund" -}}
A payment needs a refund.

Registration: {{.RegistrationID}}
Event:        {{.EventName}}
Amount:       {{.Amount}}
{{if .Processor}}Processor:    {{.Processor}}{{if .PaymentID}}, payment {{.PaymentID}}{{end}}
{{end}}Reason:       {{if .Reason}}{{.Reason}}{{else}}not recorded{{end}}

ticketd did not book this registration. Refund the payment through the
payment processor.
{{- end}}
`))

	htmlTemplates = htmltemplate.Must(htmltemplate.New("").Parse(`
{{- define "head" -}}
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.}}</title></head>
<body style="margin:0;padding:16px;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#111;background:#fff">
<div style="max-width:560px;margin:0 auto">
{{- end}}
{{- define "foot"}}</div></body></html>{{end}}

{{- define "buyer" -}}
{{template "head" (print "Your tickets for " .EventName)}}
<h1 style="font-size:22px">Your tickets for {{.EventName}}</h1>
{{if .When}}<p>{{.When}}</p>{{end}}
{{if .Inline -}}
<p>Hello {{.BuyerName}}, thank you for your order <strong>{{.Ref}}</strong>. Show each ticket's QR code at the
door, on your phone or printed.</p>
{{- else -}}
<p>Hello {{.BuyerName}}, thank you for your order <strong>{{.Ref}}</strong>. Your {{.Count}} tickets, each with
its QR code to show at the door, on your phone or printed, are on your ticket page.</p>
{{- end}}
<p><a href="{{.PageURL}}" style="display:inline-block;padding:10px 16px;background:#1a4fd6;color:#fff;text-decoration:none;border-radius:6px">View or print your tickets</a></p>
{{if .Inline}}{{range .Tickets}}
<div style="border:1px solid #ccc;border-radius:8px;padding:12px;margin:12px 0;text-align:center">
<p style="margin:0 0 8px;font-size:18px"><strong>{{.Label}}</strong></p>
<img src="cid:{{.CID}}" width="256" height="256" alt="QR code of ticket {{.N}}, {{.ID}}">
<p style="margin:8px 0 0;font-family:monospace">Ticket {{.N}}: {{.ID}}</p>
</div>
{{end}}{{end}}
{{- if .List}}
<ul>{{range .Tickets}}<li>Ticket {{.N}}: {{.Label}} ({{.ID}})</li>{{end}}</ul>
{{end}}
<p>Total paid: {{.Total}}<br>Order reference {{.Ref}} (order id {{.OrderID}})</p>
<p>{{.TenantName}}</p>
{{template "foot"}}
{{- end}}

{{- define "host" -}}
{{template "head" (print "New registration for " .EventName)}}
<h1 style="font-size:20px">New registration for {{.EventName}}</h1>
{{if .When}}<p>{{.When}}</p>{{end}}
<table>
<tr><th scope="row" align="left">Buyer</th><td>{{.BuyerName}} &lt;{{.BuyerEmail}}&gt;{{if .BuyerPhone}}, {{.BuyerPhone}}{{end}}</td></tr>
<tr><th scope="row" align="left">Order</th><td>{{.Ref}} ({{.OrderID}})</td></tr>
<tr><th scope="row" align="left">Amount</th><td>{{.Total}}</td></tr>
<tr><th scope="row" align="left">Tickets</th><td>{{.Count}}</td></tr>
</table>
{{if .Tickets}}<ul>{{range .Tickets}}<li>{{.Label}} ({{.ID}})</li>{{end}}</ul>{{end}}
{{template "foot"}}
{{- end}}

{{- define "refund" -}}
{{template "head" "A payment needs a refund"}}
<h1 style="font-size:20px">A payment needs a refund</h1>
<table>
<tr><th scope="row" align="left">Registration</th><td>{{.RegistrationID}}</td></tr>
<tr><th scope="row" align="left">Event</th><td>{{.EventName}}</td></tr>
<tr><th scope="row" align="left">Amount</th><td>{{.Amount}}</td></tr>
{{if .Processor}}<tr><th scope="row" align="left">Processor</th><td>{{.Processor}}{{if .PaymentID}}, payment {{.PaymentID}}{{end}}</td></tr>{{end}}
<tr><th scope="row" align="left">Reason</th><td>{{if .Reason}}{{.Reason}}{{else}}not recorded{{end}}</td></tr>
</table>
<p>ticketd did not book this registration. Refund the payment through the payment processor.</p>
{{template "foot"}}
{{- end}}
`))
)

// execute renders the text and HTML templates of name.
func execute(name string, data any) (text, html string, err error) {
	var t, h bytes.Buffer
	if err := textTemplates.ExecuteTemplate(&t, name, data); err != nil {
		return "", "", fmt.Errorf("mailer: render %s: %w", name, err)
	}
	if err := htmlTemplates.ExecuteTemplate(&h, name, data); err != nil {
		return "", "", fmt.Errorf("mailer: render %s: %w", name, err)
	}
	return t.String() + "\n", h.String(), nil
}
