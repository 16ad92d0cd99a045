package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client asks a control plane over HTTP.
type Client struct {
	Endpoint string
	HTTP     *http.Client
}

// NewClient returns a client for endpoint (e.g. http://127.0.0.1:7400) with a per-call timeout.
func NewClient(endpoint string, timeout time.Duration) *Client {
	return &Client{Endpoint: strings.TrimRight(endpoint, "/"), HTTP: &http.Client{Timeout: timeout}}
}

func (c *Client) do(ctx context.Context, method, path string, body, into any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Endpoint+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("control plane %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("control plane %s %s: reading answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorAnswer
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("control plane %s %s: %s: %s", method, path, resp.Status, e.Error)
		}
		return fmt.Errorf("control plane %s %s: %s", method, path, resp.Status)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("control plane %s %s: unparsable answer: %v", method, path, err)
	}
	return nil
}

// Schedulable asks which servers are schedulable, for objs (none: overall). The answer is
// checked for shape (a sequence number, named servers) before it is returned.
func (c *Client) Schedulable(ctx context.Context, objs []string) (*SchedulableAnswer, error) {
	path := "/v1/schedulable"
	if len(objs) > 0 {
		path += "?objects=" + url.QueryEscape(strings.Join(objs, ","))
	}
	var a SchedulableAnswer
	if err := c.do(ctx, http.MethodGet, path, nil, &a); err != nil {
		return nil, err
	}
	if a.Servers == nil {
		return nil, fmt.Errorf("control plane GET %s: unparsable answer: no servers list", path)
	}
	for _, s := range a.Servers {
		if s.Name == "" {
			return nil, fmt.Errorf("control plane GET %s: unparsable answer: server without a name", path)
		}
	}
	return &a, nil
}

// Status is Schedulable with no objects.
func (c *Client) Status(ctx context.Context) (*SchedulableAnswer, error) {
	return c.Schedulable(ctx, nil)
}

func (c *Client) change(ctx context.Context, path string, body any) (ChangeAnswer, error) {
	var a ChangeAnswer
	err := c.do(ctx, http.MethodPost, path, body, &a)
	return a, err
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
func (c *Client) Ack(ctx context.Context, server, obj string, epoch uint64) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/ack", AckRequest{Server: server, Object: obj, Epoch: epoch})
}
func (c *Client) Invoke(ctx context.Context, req InvocationRequest) (ChangeAnswer, error) {
	return c.change(ctx, "/v1/invocations", req)
}

// RegisterObject is the Object Manager's POST /v1/objects; valid false removes the entry.
func (c *Client) RegisterObject(ctx context.Context, obj, base, size uint64, valid bool) (ChangeAnswer, error) {
	v := uint64(0)
	if valid {
		v = 1
	}
	return c.change(ctx, "/v1/objects", ObjectRequest{Obj: &obj, Base: &base, Size: &size, Valid: &v})
}
func (c *Client) Object(ctx context.Context, obj string) (*ObjectAnswer, error) {
	var a ObjectAnswer
	if err := c.do(ctx, http.MethodGet, "/v1/objects/"+url.PathEscape(obj), nil, &a); err != nil {
		return nil, err
	}
	return &a, nil
}
func (c *Client) Log(ctx context.Context) ([]LogEntry, error) {
	var l []LogEntry
	err := c.do(ctx, http.MethodGet, "/v1/log", nil, &l)
	return l, err
}
