package catalog

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// StoredChannel is a channel as it is kept at rest (Postgres, Redis
// projection): the secret only as a SHA-256 hash, the signing key sealed with
// the deployment's secrets key. Secrets are random strings, so a fast hash
// is enough; it keeps the credential check cheap on the hot path.
type StoredChannel struct {
	Channel
	SecretHash       string `json:"secretHash"`
	SigningKeySealed string `json:"signingKeySealed,omitempty"`
}

// HashSecret returns the stored form of a channel secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return base64.RawStdEncoding.EncodeToString(sum[:])
}

// Sealer encrypts and decrypts signing keys at rest with AES-256-GCM.
type Sealer struct{ aead cipher.AEAD }

// SealKey is the 256-bit AES key NewSealer derives from secret
// (TICKETD_SECRETS_KEY); exported so the secrets test searches the stores
// for the key actually used.
func SealKey(secret string) []byte {
	k := sha256.Sum256([]byte("ticketd-seal:" + secret))
	return k[:]
}

// NewSealer derives a 256-bit key from secret (TICKETD_SECRETS_KEY).
func NewSealer(secret string) *Sealer {
	block, err := aes.NewCipher(SealKey(secret))
	if err != nil {
		panic(err) // a 32-byte key never fails
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &Sealer{aead: aead}
}

// Seal encrypts plain; the nonce travels in front of the ciphertext.
func (s *Sealer) Seal(plain string) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := s.aead.Seal(nonce, nonce, []byte(plain), nil)
	return base64.RawStdEncoding.EncodeToString(out)
}

// ErrUnseal means a sealed value was written with another secrets key.
var ErrUnseal = errors.New("catalog: cannot unseal signing key (was TICKETD_SECRETS_KEY changed?)")

// Open decrypts a value made by Seal.
func (s *Sealer) Open(sealed string) (string, error) {
	b, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", ErrUnseal
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", ErrUnseal
	}
	return string(plain), nil
}

// Store converts a document channel to its at-rest form; the clear secret
// and signing key are dropped from the copy.
func (s *Sealer) Store(c Channel) StoredChannel {
	sc := StoredChannel{Channel: c, SecretHash: HashSecret(c.Secret)}
	if c.SigningKey != "" {
		sc.SigningKeySealed = s.Seal(c.SigningKey)
	}
	sc.Secret, sc.SigningKey = "", ""
	return sc
}
