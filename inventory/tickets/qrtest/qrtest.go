// Package qrtest reads QR codes back from PNGs in tests, with an
// independent decoder (gozxing), so a test checks what a door scanner sees.
package qrtest

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// Decode returns the text of the QR code in a PNG; the test fails when
// there is none.
func Decode(t testing.TB, b []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("qrtest: not a PNG: %v", err)
	}
	return Read(t, img)
}

// Read returns the text of the one QR code in img, the code and its quiet
// zone (a PNG of one, or a screenshot cropped around one); the test fails
// when there is none.
//
// It reads as a camera scans (the finder-pattern detector), else as the
// pure, upright code the image is. gozxing's detector misplaces the grid
// of about one code in 40 of ticketd's PNGs (ReedSolomonException) and
// misjudges the module count of a few drawn on the ticket page (about a
// run in a dozen: "dimension = 31"); read as pure codes, every one
// decodes. Both read the pixels as drawn, and the data and its error
// correction are checked in full, so a code drawn wrong fails both.
func Read(t testing.TB, img image.Image) string {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatalf("qrtest: %v", err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_TRY_HARDER: true})
	if err != nil {
		pure := map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true}
		var perr error
		if res, perr = qrcode.NewQRCodeReader().Decode(bmp, pure); perr != nil {
			t.Fatalf("qrtest: no QR code in the image: %v (as a pure code: %v)", err, perr)
		}
	}
	return res.GetText()
}
