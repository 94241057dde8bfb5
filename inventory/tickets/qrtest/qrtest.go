// Package qrtest reads QR codes back from PNGs in tests, with an
// independent decoder (gozxing), so a test checks what a door scanner sees.
package qrtest

import (
	"bytes"
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
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatalf("qrtest: %v", err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		// gozxing's finder-pattern detector misplaces the grid of about
		// one code in 40 of these renderings (ReedSolomonException); read
		// as the pure, upright code the PNG is, every one decodes. The
		// data and its error correction are still checked in full.
		pure := map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true}
		var perr error
		if res, perr = qrcode.NewQRCodeReader().Decode(bmp, pure); perr != nil {
			t.Fatalf("qrtest: no QR code in the PNG: %v (as a pure code: %v)", err, perr)
		}
	}
	return res.GetText()
}
