package tickets

import (
	"crypto/hmac"
	"net/url"
	"strings"
)

// PageMAC returns the k parameter of an order's ticket page link: the first
// 128 bits of HMAC-SHA256(page key, orderID) in unpadded base64url. Only a
// holder of the link (the buyer's e-mail) can open the page.
func (k *Keys) PageMAC(orderID string) string {
	return b64.EncodeToString(mac(k.pages, orderID)[:16])
}

// CheckPageMAC reports, in constant time, whether m is orderID's PageMAC.
func (k *Keys) CheckPageMAC(orderID, m string) bool {
	return hmac.Equal([]byte(m), []byte(k.PageMAC(orderID)))
}

// PageURL returns the buyer's ticket page of an order under appURL (the
// public base URL, TICKETD_APP_URL): {appURL}/tickets/<orderId>?k=<mac>.
func (k *Keys) PageURL(appURL, orderID string) string {
	return strings.TrimRight(appURL, "/") + "/tickets/" + url.PathEscape(orderID) + "?k=" + k.PageMAC(orderID)
}
