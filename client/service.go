package client

import (
	"context"
	"net/http"
)

// Info describes the server: GET /v1/info.
type Info struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Store        string   `json:"store"` // embedded, redis or redis-cluster
	Partitions   int      `json:"partitions"`
	Capabilities []string `json:"capabilities"`
}

// Info reads what the server is and can do.
func (c *Client) Info(ctx context.Context, opts ...CallOption) (*Info, error) {
	return fetch[Info](ctx, c, http.MethodGet, "/v1/info", nil, nil, opts)
}

// Ready asks GET /readyz: nil when the server and its store answer, an *Error
// (503 store_unavailable, with RetryAfter) when the store does not.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/readyz", nil, nil, nil, nil)
	return err
}
