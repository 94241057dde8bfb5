package mailer_test

import (
	"encoding/base64"
	"io"
	"mime/quotedprintable"
)

func quotedPrintable(r io.Reader) io.Reader { return quotedprintable.NewReader(r) }

func base64Reader(r io.Reader) io.Reader { return base64.NewDecoder(base64.StdEncoding, r) }
