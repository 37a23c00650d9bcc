package slack

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A click sends the whole message clicked back to the interactions route:
// Slack repeats it under "message" in the payload, JSON in a form field, so
// escaping and then percent-encoding make it several times its size. The
// route's cap is derived from the largest message Render makes, and Render
// keeps every message within a budget so that the largest one is bounded:
// requests past the budget are counted, never shown, as those past Block
// Kit's 50 blocks are.
const (
	// MaxMessageEchoBytes is the most bytes a message Render makes may take
	// in an interaction payload, counted at the dearest encoding of each of
	// its characters (echoBytes). A dozen requests with long prompts and
	// five options each take about a third of it.
	MaxMessageEchoBytes = 256 << 10

	// MaxInteractionBytes is the largest interaction payload a click on a
	// message Render made can be: the message; typed text, twice (the
	// action's value and the payload's state); and the rest of the
	// payload. It is the interactions route's body cap.
	MaxInteractionBytes = MaxMessageEchoBytes + 2*maxTypedChars*maxCharEcho + envelopeBytes

	// maxTypedChars is the most a person can type into Render's text input:
	// Slack's plain_text_input takes 3000 characters unless told fewer.
	maxTypedChars = 3000
	// maxCharEcho is the most bytes one character takes in a payload: one
	// past U+FFFF, as a \u surrogate pair percent-encoded
	// (%5CuD83D%5CuDE00).
	maxCharEcho = 16
	// envelopeBytes is room for the rest of a payload: who acted, the team,
	// the channel, the container, the trigger id and response URL, the
	// message's own fields (ts, the bot's profile), and the control clicked,
	// repeated in the action.
	envelopeBytes = 16 << 10
	// slackAddedBytes is room on every object of an echoed message for the
	// fields Slack adds to what it stores: a block_id on blocks sent
	// without one, emoji and verbatim flags on text.
	slackAddedBytes = 128
	// separatorBytes is a colon or comma after a token, percent-encoded.
	separatorBytes = 3
)

// echoBytes is the most bytes v (a message or part of one) can take in an
// interaction payload, whichever way Slack writes its JSON: each character
// at its dearest encoding (charEcho), quotes, brackets and separators
// percent-encoded, and slackAddedBytes on every object. It adds up: a
// message's count is its parts' counts summed.
func echoBytes(v any) int {
	raw, err := json.Marshal(v)
	if err != nil {
		return 0 // the message types always marshal
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n // the end: what Marshal made always reads back
		}
		n += separatorBytes
		switch tok := tok.(type) {
		case json.Delim:
			n += 3
			if tok == '{' {
				n += slackAddedBytes
			}
		case string:
			n += 2 * 3 // its quotes
			for _, r := range tok {
				n += charEcho(r)
			}
		case json.Number:
			n += len(tok)
		case bool:
			n += len("false")
		default:
			n += len("null")
		}
	}
}

// charEcho is the most bytes r takes in a payload: written as itself or
// escaped (\" \\ \/, \uXXXX, a surrogate pair past U+FFFF), as JSON
// encoders variously do, then percent-encoded in the form, where anything
// but A-Z a-z 0-9 - . _ ~ takes three bytes.
func charEcho(r rune) int {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-._~", r):
		return 1
	case r == '"', r == '\\', r == '/':
		return 6 // \" as %5C%22
	case r < 0x20, r == 0x7f, strings.ContainsRune("<>&'", r):
		return 8 // \u003C as %5Cu003C
	case r < utf8.RuneSelf:
		return 3
	case r <= 0xffff:
		return max(8, 3*utf8.RuneLen(r)) // \uXXXX, or each UTF-8 byte as %XX
	}
	return maxCharEcho
}
