package mailer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"strings"
	"time"
	"unicode/utf8"
)

// inline is an image the HTML part shows by its Content-ID.
type inline struct {
	cid, name string
	png       []byte
}

// message is an e-mail before encoding.
type message struct {
	from, to, subject, messageID string
	date                         time.Time
	text, html                   string
	images                       []inline
	// smaller, when not nil, renders the message in a smaller form, for
	// one that encodes over the size bound (render).
	smaller func() (message, error)
}

// encode builds the RFC 5322 message: multipart/alternative (text, HTML),
// wrapped in multipart/related with the images when there are any. Headers
// that carry data (subject, names) are RFC 2047-encoded, so no CR or LF in
// them can start a header of its own.
func (m message) encode() ([]byte, error) {
	var buf bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&buf, "%s: %s\r\n", k, v) }
	h("From", m.from)
	h("To", m.to)
	h("Subject", headerText(m.subject))
	h("Date", m.date.Format(time.RFC1123Z))
	h("Message-ID", "<"+m.messageID+">")
	h("MIME-Version", "1.0")
	h("Auto-Submitted", "auto-generated")

	alt := func(w *multipart.Writer) error {
		for _, p := range []struct{ ctype, body string }{
			{"text/plain; charset=utf-8", m.text}, {"text/html; charset=utf-8", m.html},
		} {
			pw, err := w.CreatePart(textproto.MIMEHeader{
				"Content-Type": {p.ctype}, "Content-Transfer-Encoding": {"quoted-printable"}})
			if err != nil {
				return err
			}
			qp := quotedprintable.NewWriter(pw)
			if _, err := qp.Write([]byte(p.body)); err != nil {
				return err
			}
			if err := qp.Close(); err != nil {
				return err
			}
		}
		return w.Close()
	}
	if len(m.images) == 0 {
		w := multipart.NewWriter(&buf)
		h("Content-Type", "multipart/alternative; boundary="+w.Boundary())
		buf.WriteString("\r\n")
		if err := alt(w); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	rel := multipart.NewWriter(&buf)
	h("Content-Type", `multipart/related; type="multipart/alternative"; boundary=`+rel.Boundary())
	buf.WriteString("\r\n")
	var altBody bytes.Buffer
	aw := multipart.NewWriter(&altBody)
	if err := alt(aw); err != nil {
		return nil, err
	}
	pw, err := rel.CreatePart(textproto.MIMEHeader{"Content-Type": {"multipart/alternative; boundary=" + aw.Boundary()}})
	if err != nil {
		return nil, err
	}
	if _, err := pw.Write(altBody.Bytes()); err != nil {
		return nil, err
	}
	for _, img := range m.images {
		pw, err := rel.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {`image/png; name="` + img.name + `"`},
			"Content-Transfer-Encoding": {"base64"},
			"Content-ID":                {"<" + img.cid + ">"},
			"Content-Disposition":       {`inline; filename="` + img.name + `"`},
		})
		if err != nil {
			return nil, err
		}
		if err := writeBase64(pw, img.png); err != nil {
			return nil, err
		}
	}
	if err := rel.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// headerText is s as a header's value: as it is when short printable
// ASCII, else RFC 2047 encoded words of whole characters, one per line
// ("?=\r\n =?" between them). However long s is (names run to 200
// characters, each up to 4 bytes), no line passes 78 characters, and a
// CR or LF in s cannot start a header of its own.
func headerText(s string) string {
	if len(s) <= 60 && plainASCII(s) {
		return s
	}
	var words []string
	for len(s) > 0 {
		// 39 bytes are 52 of base64: a word of 64, a line of 73 after
		// "Subject: ".
		n := min(39, len(s))
		for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // not UTF-8: cut anywhere
			n = min(39, len(s))
		}
		words = append(words, "=?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, "\r\n ")
}

// plainASCII reports whether s can stand in a header unencoded.
func plainASCII(s string) bool {
	for i := range len(s) {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return !strings.Contains(s, "=?")
}

// writeBase64 writes b in base64 lines of 76 characters (RFC 2045).
func writeBase64(w interface{ Write([]byte) (int, error) }, b []byte) error {
	s := base64.StdEncoding.EncodeToString(b)
	for len(s) > 0 {
		n := min(76, len(s))
		if _, err := w.Write([]byte(s[:n] + "\r\n")); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}
