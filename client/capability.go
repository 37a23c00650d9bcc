package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
)

// PostResult is a hook's answer to a post.
type PostResult struct {
	Status int
	Header http.Header
	Body   []byte // as answered: 202 {ok, eventId, duplicate}, or the hook's static response
	// From the default 202 answer: the stored event, and whether the post
	// repeated a delivery id the hook had seen (nothing new was stored).
	EventID   string
	Duplicate bool
}

// maxPostAnswer bounds how much of a post's answer is read.
const maxPostAnswer = 1 << 20

// Post posts body to a hook's callback URL, as an outside system does: the
// URL is the credential, so no Authorization header is sent (the client's
// base URL and token are not used). header is sent as given; set
// Content-Type and any signature there. A 2xx answer is a *PostResult; any
// other is an *Error (410 hook_closed, 404 not_found, 401
// signature_invalid, 429 rate_limited ...). No error text carries the
// URL's token.
func (c *Client) Post(ctx context.Context, callbackURL string, body []byte, header http.Header) (*PostResult, error) {
	resp, err := c.postCapability(ctx, "callback", callbackURL, body, header, nil)
	if err != nil {
		return nil, err
	}
	defer drainClose(resp.Body)
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPostAnswer))
	if err != nil {
		return nil, fmt.Errorf("taskhook: read the answer to a post (status %d): %w", resp.StatusCode, err)
	}
	res := &PostResult{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	if resp.StatusCode == http.StatusAccepted {
		var ack struct {
			EventID   string `json:"eventId"`
			Duplicate bool   `json:"duplicate"`
		}
		if json.Unmarshal(raw, &ack) == nil {
			res.EventID, res.Duplicate = ack.EventID, ack.Duplicate
		}
	}
	return res, nil
}

// InputAnswer is the answer to AnswerInput: the task and request answered
// and the task's status after it. Not the task itself: the holder of an
// answer URL may not read it.
type InputAnswer struct {
	OK        bool   `json:"ok"`
	TaskID    string `json:"taskId"`
	RequestID string `json:"requestId"`
	Status    string `json:"status"`
}

// AnswerInput answers the one request an answerUrl names, as a channel does:
// the URL is the credential, so no Authorization header is sent (the
// client's base URL and token are not used). optionID or text (or both) is
// required. A request answered already, or whose task ended, is a 410
// input_closed *Error, even for the same answer: retry with
// WithIdempotencyKey instead. No error text carries the URL's token.
func (c *Client) AnswerInput(ctx context.Context, answerURL, optionID, text string, opts ...CallOption) (*InputAnswer, error) {
	var cl call
	for _, o := range opts {
		if o != nil {
			o(&cl)
		}
	}
	body, err := json.Marshal(struct {
		OptionID string `json:"optionId,omitempty"`
		Text     string `json:"text,omitempty"`
	}{optionID, text})
	if err != nil {
		return nil, fmt.Errorf("taskhook: encode an answer: %w", err)
	}
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	if cl.idempotencyKey != "" {
		header.Set("Idempotency-Key", cl.idempotencyKey)
	}
	if cl.requestID != "" {
		header.Set("X-Request-Id", cl.requestID)
	}
	resp, err := c.postCapability(ctx, "answer", answerURL, body, header, cl.meta)
	if err != nil {
		return nil, err
	}
	defer drainClose(resp.Body)
	var out InputAnswer
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("taskhook: decode the answer to an input answer (status %d): %w", resp.StatusCode, err)
	}
	return &out, nil
}

// postCapability posts body to a capability URL (a hook's callback URL, a
// request's answer URL): the URL is the credential, so no Authorization
// header is sent and no error text carries the URL's token. A 2xx answer is
// returned for the caller to read and close; any other is an *Error. meta,
// when not nil, gets the answer's metadata.
func (c *Client) postCapability(ctx context.Context, what, rawURL string, body []byte, header http.Header, meta *Response) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the parse error without the URL
		}
		return nil, fmt.Errorf("taskhook: post: the %s URL is not valid: %w", what, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redactCallbackURL(ue.URL)
		}
		return nil, fmt.Errorf("taskhook: %w", err)
	}
	if meta != nil {
		*meta = Response{
			Status: resp.StatusCode, Header: resp.Header,
			Replayed:  resp.Header.Get("Idempotent-Replayed") == "true",
			RequestID: resp.Header.Get("X-Request-Id"),
		}
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer drainClose(resp.Body)
	if token := path.Base(req.URL.Path); len(token) > 1 {
		// In case a proxy's page echoes the path: redacted in the whole
		// answer, before an excerpt of it can cut the token short.
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		redacted := *resp
		redacted.Body = io.NopCloser(bytes.NewReader(bytes.ReplaceAll(raw, []byte(token), []byte("[redacted]"))))
		return nil, c.decodeError(&redacted)
	}
	return nil, c.decodeError(resp)
}

// redactCallbackURL drops the last path segment (the token) and the query
// of a capability URL, for error texts.
func redactCallbackURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[callback URL]"
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment, u.User = path.Dir(u.Path)+"/", "", "", "", nil
	return u.String() + "[redacted]"
}
