package slacktest

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/taskhook/taskhook/api/wire"
)

// The limits the task service puts on one call's input requests.
const (
	maxRequests    = 64
	maxPromptBytes = 4000
	maxOptions     = 25
	maxLabelBytes  = 200
	idLen          = 64
)

// LargestRequests are as much as one call may ask: 64 requests, each a
// 4000-byte prompt, 25 options with 200-byte labels and 64-character ids,
// and free text, all written in s.
func LargestRequests(s string) []wire.InputRequest {
	reqs := make([]wire.InputRequest, maxRequests)
	for i := range reqs {
		r := wire.InputRequest{RequestID: fmt.Sprintf("request-%0*d", idLen-len("request-"), i), Kind: wire.KindAsk,
			Prompt: Fill(s, maxPromptBytes), Display: wire.DisplaySelect, AllowFreeform: true}
		for j := range maxOptions {
			r.Options = append(r.Options, wire.Option{ID: fmt.Sprintf("option-%0*d", idLen-len("option-"), j),
				Label: Fill(s, maxLabelBytes), Style: "danger"})
		}
		reqs[i] = r
	}
	return reqs
}

// Fill repeats s up to n bytes, never splitting a character.
func Fill(s string, n int) string {
	out := strings.Repeat(s, n/len(s)+1)[:n]
	for !utf8.ValidString(out) {
		out = out[:len(out)-1]
	}
	return out
}
