package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// SCRATCH (review): after paying, back on the seated page of the room's event.
func TestScratchSeatedRoomAfterPayment(t *testing.T) {
	s := startShopWith(t, func(c *config) { c.demoRoomT0 = time.Second })
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/seated.html?event=ev_demo_room_seated"), chromedp.WaitVisible(chromedp.ID("room-email")),
		chromedp.SendKeys(chromedp.ID("room-email"), "grace@example.com"),
		chromedp.SetValue(chromedp.ID("room-qty"), "2"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`!document.getElementById('order').hidden`))
	frame := inPicker(t, ctx, "A-4")
	for _, l := range []string{"A-4", "A-5"} {
		do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="`+l+`"]`), chromedp.FromNode(frame)),
			chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="`+l+`"]`)))
		waitSeat(t, ctx, frame, l, "mine")
	}
	do(t, ctx, until(`/holds your seats/.test(document.getElementById('room-detail').textContent)`),
		chromedp.SendKeys(chromedp.ID("name"), "Grace Hopper"),
		until(`!document.getElementById('pay-card').disabled && /Pay/.test(document.getElementById('pay-card').textContent)`))
	payOnHostedPage(t, ctx, s.shop)
	// back to the event's page in the same tab
	do(t, ctx, chromedp.Navigate(s.shop+"/seated.html?event=ev_demo_room_seated"),
		until(`document.getElementById('room').dataset.state === 'admitted'`))
	time.Sleep(2 * time.Second)
	detail, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("room-detail")))
	headline, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("room-headline")))
	orderHidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('order').hidden`))
	t.Logf("after payment: headline %q detail %q order hidden %v", headline, detail, orderHidden)
	frame = inPicker(t, ctx, "A-6")
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="A-6"]`), chromedp.FromNode(frame)))
	time.Sleep(2 * time.Second)
	said := inFrame[string](t, ctx, frame, `document.getElementById('live').textContent`)
	t.Logf("picker says after a click: %q", said)
	if strings.Contains(detail, "holds your seats") {
		t.Errorf("DEFECT: paid buyer told %q", detail)
	}
}
