// Package pages serves the pages ticketd shows buyers itself: the hosted
// payment pages of the built-in test processors and the ticket page. They
// are plain HTML, CSS and JavaScript embedded in the binary, with no
// external assets.
package pages
