// Package api is the bench's plain JSON client of ticketd (and of the
// baseline server, which mirrors it) for everything off the hot path:
// applying catalogs, reading remaining capacity, seat availability and
// order status for the integrity checks. The load itself goes through
// bench/load.
package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// Client talks to one deployment.
type Client struct {
	// Base is the base URL, e.g. http://127.0.0.1:8080.
	Base string
	// AdminToken is the bearer token of PUT /v1/admin/catalog.
	AdminToken string
	HTTP       *http.Client
}

// Key is a channel's credentials.
type Key struct {
	Key, Secret string
}

// Envelope is ticketd's response envelope.
type Envelope struct {
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// Error is a failure answer of the deployment.
type Error struct {
	Method, Path string
	Status       int
	Code         string
	Message      string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %d %s %s", e.Method, e.Path, e.Status, e.Code, e.Message)
}

// Do sends a request and decodes the envelope's data into out (when not
// nil). A non-2xx answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, key *Key, header map[string]string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("api: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != nil {
		req.Header.Set("x-service-key", key.Key)
		req.Header.Set("x-service-secret", key.Secret)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("api: %s %s: read: %w", method, path, err)
	}
	var env Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Code: "NOT_JSON", Message: string(truncate(raw))}
	}
	if resp.StatusCode/100 != 2 || !env.Success {
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Code: env.Code, Message: env.Message}
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return fmt.Errorf("api: %s %s: decode data: %w", method, path, err)
		}
	}
	return nil
}

func (c *Client) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 60 * time.Second}
}

// Metric reads one sample of GET /metrics (Prometheus text): the value of
// the line that starts with name (a metric without labels, or name with
// its labels as printed: `ticketd_redis_state{state="current"}`).
func (c *Client) Metric(ctx context.Context, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.Base+"/metrics", nil)
	if err != nil {
		return 0, fmt.Errorf("api: %w", err)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return 0, fmt.Errorf("api: GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("api: GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("api: /metrics %s: %w", name, err)
			}
			return f, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("api: GET /metrics: %w", err)
	}
	return 0, fmt.Errorf("api: /metrics has no %s", name)
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// ApplyCatalog PUTs a catalog document with the admin token.
func (c *Client) ApplyCatalog(ctx context.Context, doc *catalog.Document) error {
	return c.Do(ctx, "PUT", "/v1/admin/catalog", nil, map[string]string{"Authorization": "Bearer " + c.AdminToken}, doc, nil)
}

// Healthy waits until GET /healthz answers 200 or timeout passes.
func (c *Client) Healthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = c.Do(ctx, "GET", "/healthz", nil, nil, nil, nil); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("api: %s not healthy after %s: %w", c.Base, timeout, err)
}
