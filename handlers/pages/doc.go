// Package pages serves the pages ticketd shows buyers itself: the hosted
// payment pages of the built-in test processors and the ticket page. They
// are plain HTML and CSS embedded in the binary, with no script and no
// external assets: each page's style sheet is served from
// /assets/pages/, and its Content-Security-Policy allows nothing else
// (style-src 'self', frame-ancestors 'none'). browser_test.go drives them
// in headless Chromium.
package pages
