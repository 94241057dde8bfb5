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
		t.Fatalf("qrtest: no QR code in the PNG: %v", err)
	}
	return res.GetText()
}
