package tickets

import (
	"fmt"

	qrcode "github.com/skip2/go-qrcode"
)

// DefaultPNGSize is the side in pixels of the PNGs the e-mail and the
// ticket page show: large enough for a phone screen held to a scanner.
const DefaultPNGSize = 384

// PNG renders text as a QR code image of size x size pixels (with its
// quiet zone), error correction level M: a scratched print still scans.
func PNG(text string, size int) ([]byte, error) {
	if size <= 0 {
		size = DefaultPNGSize
	}
	b, err := qrcode.Encode(text, qrcode.Medium, size)
	if err != nil {
		return nil, fmt.Errorf("tickets: render QR: %w", err)
	}
	return b, nil
}
