package pages

import (
	"html/template"
	"strconv"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// qrSVG draws text as a QR code in SVG, quiet zone included (four
// modules, as tickets.PNG has), at error correction level M like the
// e-mail's PNG. Inline in the page it is sharp at any size a phone or a
// printer gives it, and needs no request: the page shows its codes
// offline once loaded. Black on white whatever the page's colours.
func qrSVG(text, label string) (template.HTML, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return "", err
	}
	bits := q.Bitmap() // with the quiet zone
	n := strconv.Itoa(len(bits))
	var d strings.Builder
	for y, row := range bits {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			run := 1
			for x+run < len(row) && row[x+run] {
				run++
			}
			// One horizontal bar of dark modules: M x y h run v1 h -run z.
			d.WriteString("M" + strconv.Itoa(x) + " " + strconv.Itoa(y) + "h" + strconv.Itoa(run) + "v1h-" + strconv.Itoa(run) + "z")
			x += run
		}
	}
	svg := `<svg class="qr" role="img" aria-label="` + template.HTMLEscapeString(label) + `" viewBox="0 0 ` + n + " " + n +
		`" shape-rendering="crispEdges"><rect width="` + n + `" height="` + n +
		`" fill="#fff"/><path fill="#000" d="` + d.String() + `"/></svg>`
	return template.HTML(svg), nil
}
