// Package slacktest sends what Slack sends, for tests: the interaction
// payload of a click on a message taskhook rendered, with the whole message
// echoed back the way Slack stores it, encoded as a form the way any of
// Slack's JSON writers may.
package slacktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/taskhook/taskhook/channels/slack"
)

// Encoding is how a payload's JSON writes its strings.
type Encoding int

const (
	// UTF8 writes characters as themselves, as Go does.
	UTF8 Encoding = iota
	// Escaped writes every character past ASCII as \u escapes (a surrogate
	// pair past U+FFFF) and slashes as \/, as PHP's json_encode does by
	// default.
	Escaped
)

// Encodings are both, for tests that want the dearest.
var Encodings = []Encoding{UTF8, Escaped}

func (e Encoding) String() string {
	if e == Escaped {
		return "escaped"
	}
	return "utf8"
}

// Click is the block_actions payload Slack sends when user acts on el (of
// block) in msg: who, where, the message as Slack stores it (block ids on
// every block, emoji and verbatim flags on text), the action, and the state
// of the message's text inputs, typed holding what was typed into el when el
// is one (a button ignores it).
func Click(user string, msg slack.Message, block slack.Block, el slack.Element, typed string) map[string]any {
	act := map[string]any{"type": el.Type, "action_id": el.ActionID, "block_id": block.BlockID, "action_ts": "1700000000.123456"}
	if el.Type == slack.ElementButton {
		act["value"], act["text"] = el.Value, map[string]any{"type": slack.TextPlain, "text": el.Text.Text, "emoji": true}
		if el.Style != "" {
			act["style"] = el.Style
		}
	} else {
		act["value"] = typed
	}
	values := map[string]any{}
	for _, b := range msg.Blocks {
		if b.Element != nil && b.Element.Type == slack.ElementTextInput {
			var v any // what nobody typed is null
			if b.Element.ActionID == el.ActionID {
				v = typed
			}
			values[b.BlockID] = map[string]any{b.Element.ActionID: map[string]any{"type": slack.ElementTextInput, "value": v}}
		}
	}
	return map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": user, "username": "alice.longname-of-the-platform-team", "name": "alice.longname-of-the-platform-team", "team_id": "T0123ABCDEF"},
		"api_app_id": "A0123ABCDEF", "token": "verification-token-of-the-app-0000",
		"container":  map[string]any{"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0123ABCDEF", "is_ephemeral": false},
		"trigger_id": "1234567890123.1234567890123.0123456789abcdef0123456789abcdef",
		"team":       map[string]any{"id": "T0123ABCDEF", "domain": "the-platform-team-workspace"},
		"enterprise": nil, "is_enterprise_install": false,
		"channel":      map[string]any{"id": "C0123ABCDEF", "name": "platform-deploys-and-release-approvals-for-every-service"},
		"message":      stored(msg),
		"state":        map[string]any{"values": values},
		"response_url": "https://hooks.slack.com/actions/T0123ABCDEF/1234567890123/AbCdEfGhIjKlMnOpQrStUvWx",
		"actions":      []any{act},
	}
}

// stored is msg as Slack keeps and echoes it: its own fields, a block_id on
// every block that had none, and the flags Slack puts on text objects.
func stored(msg slack.Message) map[string]any {
	raw, _ := json.Marshal(msg)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	blocks, _ := m["blocks"].([]any)
	for i, b := range blocks {
		if b := b.(map[string]any); b["block_id"] == nil {
			b["block_id"] = fmt.Sprintf("Xq%03d", i)
		}
		flagText(b)
	}
	m["type"], m["subtype"], m["user"], m["ts"] = "message", "bot_message", "U0BOTUSER01", "1700000000.000100"
	m["bot_id"], m["app_id"], m["team"] = "B0123ABCDEF", "A0123ABCDEF", "T0123ABCDEF"
	m["bot_profile"] = map[string]any{"id": "B0123ABCDEF", "deleted": false, "name": "taskhook", "updated": 1700000000,
		"app_id": "A0123ABCDEF", "team_id": "T0123ABCDEF", "icons": map[string]any{
			"image_36": "https://avatars.slack-edge.com/2024-01-01/1234567890123_0123456789abcdef0123_36.png",
			"image_48": "https://avatars.slack-edge.com/2024-01-01/1234567890123_0123456789abcdef0123_48.png",
			"image_72": "https://avatars.slack-edge.com/2024-01-01/1234567890123_0123456789abcdef0123_72.png"}}
	return m
}

// flagText marks every text object under v as Slack does.
func flagText(v any) {
	switch v := v.(type) {
	case map[string]any:
		switch v["type"] {
		case slack.TextPlain:
			v["emoji"] = true
		case slack.TextMarkdown:
			v["verbatim"] = false
		}
		for _, x := range v {
			flagText(x)
		}
	case []any:
		for _, x := range v {
			flagText(x)
		}
	}
}

// Form is payload as the form body Slack posts: payload= and the JSON,
// written by enc and percent-encoded (a space as %20).
func Form(payload any, enc Encoding) []byte {
	raw, err := json.Marshal(payload)
	if err != nil {
		panic(err) // a payload of maps, strings and messages always marshals
	}
	s := string(raw)
	if enc == Escaped {
		s = escapeAll(s)
	}
	return []byte("payload=" + strings.ReplaceAll(url.QueryEscape(s), "+", "%20"))
}

// escapeAll rewrites JSON with every character past ASCII as \u escapes
// and slashes as \/: both appear only inside strings, so the JSON stays
// the same value.
func escapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '/':
			b.WriteString(`\/`)
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
