package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client asks a control plane over HTTP. It never follows a redirect (a 3xx is an error), reads
// at most MaxAnswer bytes of an answer (more is an error), and decodes answers strictly
// (answer.go): the plugin fails closed on anything else.
type Client struct {
	Endpoint string
	HTTP     *http.Client
	// MaxAnswer bounds an answer's body in bytes (DefaultMaxAnswer if 0).
	MaxAnswer int64
	// Token, if set, is sent as "Authorization: Bearer <Token>" on every call.
	Token string
}

// DefaultMaxAnswer bounds an answer: 4 MiB holds a schedulable answer for thousands of servers
// (≈ 300 bytes each) with their pending-object lists.
const DefaultMaxAnswer = 4 << 20

// ErrRedirect is returned for a 3xx answer: the client never follows one (the Location could be
// any server; only the configured endpoint is trusted).
var ErrRedirect = errors.New("redirect refused")

// NewClient returns a client for endpoint (e.g. http://127.0.0.1:7400) with a per-call timeout.
func NewClient(endpoint string, timeout time.Duration) *Client {
	return &Client{Endpoint: strings.TrimRight(endpoint, "/"), HTTP: &http.Client{
		Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// raw makes one call and returns the body of a 200 answer.
func (c *Client) raw(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Endpoint+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc.CheckRedirect == nil { // a caller-supplied http.Client: still never follow
		cp := *hc
		cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		hc = &cp
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control plane %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("control plane %s %s: %s to %q: %w", method, path, resp.Status, resp.Header.Get("Location"), ErrRedirect)
	}
	max := c.MaxAnswer
	if max <= 0 {
		max = DefaultMaxAnswer
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("control plane %s %s: reading answer: %w", method, path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("control plane %s %s: answer larger than %d bytes: refused", method, path, max)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorAnswer
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("control plane %s %s: %s: %w", method, path, resp.Status, &APIError{Status: resp.StatusCode, Code: e.Code, Msg: e.Error})
		}
		return nil, fmt.Errorf("control plane %s %s: %s", method, path, resp.Status)
	}
	return b, nil
}

// Schedulable asks which servers are schedulable, for objs (none: overall). The answer is
// validated (DecodeSchedulableAnswer) before it is returned.
func (c *Client) Schedulable(ctx context.Context, objs []string) (*SchedulableAnswer, error) {
	path := "/v1/schedulable"
	if len(objs) > 0 {
		path += "?objects=" + url.QueryEscape(strings.Join(objs, ","))
	}
	b, err := c.raw(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	a, err := DecodeSchedulableAnswer(b, objs)
	if err != nil {
		return nil, fmt.Errorf("control plane GET %s: %w", path, err)
	}
	return a, nil
}

// Status is Schedulable with no objects.
func (c *Client) Status(ctx context.Context) (*SchedulableAnswer, error) {
	return c.Schedulable(ctx, nil)
}

func (c *Client) change(ctx context.Context, path string, body any) (ChangeAnswer, error) {
	b, err := c.raw(ctx, http.MethodPost, path, body)
	if err != nil {
		return ChangeAnswer{}, err
	}
	a, err := DecodeChangeAnswer(b)
	if err != nil {
		return ChangeAnswer{}, fmt.Errorf("control plane POST %s: %w", path, err)
	}
	return a, nil
}

func (c *Client) AddServer(ctx context.Context, name string) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/servers", ServerRequest{Server: name})
}
func (c *Client) Fence(ctx context.Context, name string) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/servers/"+url.PathEscape(name)+"/fence", struct{}{})
}
func (c *Client) Rejoin(ctx context.Context, name string) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/servers/"+url.PathEscape(name)+"/rejoin", struct{}{})
}
func (c *Client) Commit(ctx context.Context, server, obj string) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/commit", CommitRequest{Server: server, Object: obj})
}
func (c *Client) Cache(ctx context.Context, server, obj string) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/cache", CommitRequest{Server: server, Object: obj})
}

// CacheAt is a versioned get: it returns when the control plane has served version (or a later
// one) of obj. A full hold table (holdFull) or the client's timeout is retried after retry; a cancelled version, a fenced
// reader and every other refusal are returned (errors.As an *APIError for the code).
func (c *Client) CacheAt(ctx context.Context, server, obj string, version uint64, retry time.Duration) (ChangeAnswer, error) {
	for {
		a, err := c.change(ctx, "/v1/cache", CacheRequest{Server: server, Object: obj, Version: version})
		var ae *APIError
		var ue *url.Error
		// a get held longer than the client's timeout is sent again, like a full table's GetRetry
		again := err != nil && ((errors.As(err, &ae) && ae.Code == CodeHoldFull) || (errors.As(err, &ue) && ue.Timeout() && ctx.Err() == nil))
		if !again {
			return a, err
		}
		select {
		case <-ctx.Done():
			return ChangeAnswer{}, fmt.Errorf("%w (after %v)", err, ctx.Err())
		case <-time.After(retry):
		}
	}
}

// Cancel is the Object Manager's POST /v1/cancel: no put will make version (or later) of obj.
func (c *Client) Cancel(ctx context.Context, obj string, version uint64) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/cancel", CancelRequest{Object: obj, Version: version})
}

func (c *Client) Ack(ctx context.Context, server, obj string, epoch uint64) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/ack", AckRequest{Server: server, Object: obj, Epoch: epoch})
}
func (c *Client) Invoke(ctx context.Context, req InvocationRequest) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/invocations", req)
}

// RegisterObject is the Object Manager's POST /v1/objects: object obj of size lines (the memory
// server allocates the storage and names its base); valid false removes the object (size unused).
func (c *Client) RegisterObject(ctx context.Context, obj, size uint64, valid bool) (RegisterAnswer, error) {
	req := ObjectRequest{Obj: &obj, Size: &size}
	if !valid {
		v := uint64(0)
		req = ObjectRequest{Obj: &obj, Valid: &v}
	}
	b, err := c.raw(ctx, http.MethodPost, "/v1/objects", req)
	if err != nil {
		return RegisterAnswer{}, err
	}
	a, err := DecodeRegisterAnswer(b, strconv.FormatUint(obj, 10))
	if err != nil {
		return RegisterAnswer{}, fmt.Errorf("control plane POST /v1/objects: %w", err)
	}
	return a, nil
}
func (c *Client) Object(ctx context.Context, obj string) (*ObjectAnswer, error) {
	path := "/v1/objects/" + url.PathEscape(obj)
	b, err := c.raw(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	a, err := DecodeObjectAnswer(b, obj)
	if err != nil {
		return nil, fmt.Errorf("control plane GET %s: %w", path, err)
	}
	return a, nil
}
func (c *Client) Log(ctx context.Context) ([]LogEntry, error) {
	b, err := c.raw(ctx, http.MethodGet, "/v1/log", nil)
	if err != nil {
		return nil, err
	}
	if err := CheckJSON(b); err != nil {
		return nil, fmt.Errorf("control plane GET /v1/log: %w", err)
	}
	var l []LogEntry
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("control plane GET /v1/log: invalid answer: %v", err)
	}
	return l, nil
}
