package mailer_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	smtp "github.com/emersion/go-smtp"

	"github.com/ticketd/ticketd/sync/mailer"
)

// received is one message the test SMTP server accepted.
type received struct {
	from string
	to   []string
	data []byte
	tls  bool   // it came over TLS (STARTTLS)
	helo string // the name the client gave in EHLO
}

// smtpServer is a real SMTP server (go-smtp) on a loopback port that keeps
// what it accepts. While fail is set it answers DATA with that reply.
type smtpServer struct {
	addr string
	// user and pass, when set, are required (AUTH PLAIN).
	user, pass string

	mu   sync.Mutex
	got  []received
	fail *smtp.SMTPError
}

func startSMTP(t *testing.T, user, pass string) *smtpServer {
	t.Helper()
	return startSMTPWith(t, user, pass, nil)
}

// startSMTPWith starts a server that offers STARTTLS with tlsConfig
// (none when nil).
func startSMTPWith(t *testing.T, user, pass string, tlsConfig *tls.Config) *smtpServer {
	t.Helper()
	s := &smtpServer{user: user, pass: pass}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.TLSConfig = tlsConfig
	srv.AllowInsecureAuth = true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// startSender starts a server and returns it with a sender to it, through
// TICKETD_SMTP_URL's form (with the credentials when given).
func startSender(t *testing.T, user, pass string) (*smtpServer, *mailer.SMTP) {
	t.Helper()
	srv := startSMTP(t, user, pass)
	u := "smtp://" + srv.addr
	if user != "" {
		u = "smtp://" + user + ":" + pass + "@" + srv.addr
	}
	s, err := mailer.NewSMTP(u)
	if err != nil {
		t.Fatal(err)
	}
	return srv, s
}

func (s *smtpServer) setFail(e *smtp.SMTPError) {
	s.mu.Lock()
	s.fail = e
	s.mu.Unlock()
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

func (s *smtpServer) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{srv: s, conn: c}, nil
}

type session struct {
	srv    *smtpServer
	conn   *smtp.Conn
	authed bool
	msg    received
}

func (s *session) AuthMechanisms() []string {
	if s.srv.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.srv.user || pass != s.srv.pass {
			return smtp.ErrAuthFailed // 535
		}
		s.authed = true
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.msg.from = from
	s.msg.helo = s.conn.Hostname()
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if to == "refused@example.com" {
		// Servers quote the address, as this one does.
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox: <" + to + ">"}
	}
	s.msg.to = append(s.msg.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if s.srv.fail != nil {
		return s.srv.fail
	}
	s.msg.data = b
	_, s.msg.tls = s.conn.TLSConnectionState()
	s.srv.got = append(s.srv.got, s.msg)
	return nil
}

func (s *session) Reset()        { s.msg = received{} }
func (s *session) Logout() error { return nil }

// selfSigned returns a server TLS configuration for 127.0.0.1 and a client
// one that trusts it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: roots}
}
