package slack_test

import (
	"strings"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/channels/slack/slacktest"
)

// texts are the characters whose encodings in a payload differ most: one
// byte for a letter, up to 16 for a character past U+FFFF.
var texts = map[string]string{
	"letters":  "abcdefghij",
	"prose":    "Shall we roll the cache change (see #4812) out to eu-west now? ",
	"quotes":   `"\/`,
	"entities": "<&>'",
	"control":  "\x01\x1f\x7f",
	"accents":  "éüñø",
	"cjk":      "日本語の文",
	"emoji":    "😀🚀",
}

// largestTask waits on as much as input requests may hold, written in s.
func largestTask(s string) wire.Task[string, string] {
	return wire.Task[string, string]{TaskID: "task_0faf9mf7jjf1sdfdxx53541x1vcd", Requester: "alice",
		Status: wire.StatusInputRequired, Label: slacktest.Fill(s, 200), InputRequests: slacktest.LargestRequests(s)}
}

// TestLargestMessageFitsTheInteractionCap renders the largest task in each
// kind of text and clicks it the dearest way: the message, as Slack echoes
// it in either JSON encoding, takes no more than echoBytes counts, which
// stays within MaxMessageEchoBytes; and the whole payload, with the longest
// text Slack lets a person type, fits MaxInteractionBytes.
func TestLargestMessageFitsTheInteractionCap(t *testing.T) {
	for name, s := range texts {
		m := slack.Render(largestTask(s), nil)
		counted := slack.EchoBytes(m)
		if counted > slack.MaxMessageEchoBytes {
			t.Errorf("%s: the message counts %d bytes, above %d", name, counted, slack.MaxMessageEchoBytes)
		}
		last := m.Blocks[len(m.Blocks)-1]
		if last.Type != slack.BlockSection || !strings.Contains(last.Text.Text, "more requests not shown here") {
			t.Errorf("%s: the requests left out are not counted: %+v", name, last)
		}
		var input, button slack.Block
		for _, b := range m.Blocks {
			if b.Type == slack.BlockInput {
				input = b
			}
			if b.Type == slack.BlockActions {
				button = b
			}
		}
		if input.Element == nil || len(button.Elements) != slack.MaxActionButtons {
			t.Fatalf("%s: not one whole request shown: %d blocks", name, len(m.Blocks))
		}
		typed := slacktest.Fill("😀", 4*3000) // the most Slack's text input takes
		for _, enc := range slacktest.Encodings {
			echoed := len(slacktest.Form(map[string]any{"message": m}, enc))
			if echoed > counted {
				t.Errorf("%s, %s: the message takes %d bytes, above the %d counted", name, enc, echoed, counted)
			}
			for _, click := range []map[string]any{
				slacktest.Click("U0ALICE", m, input, *input.Element, typed),
				slacktest.Click("U0ALICE", m, button, button.Elements[len(button.Elements)-1], typed),
			} {
				if n := len(slacktest.Form(click, enc)); n > slack.MaxInteractionBytes {
					t.Errorf("%s, %s: a click of %d bytes, above the cap of %d", name, enc, n, slack.MaxInteractionBytes)
				}
			}
		}
		t.Logf("%-8s %2d blocks, counted %6d, cap %d", name, len(m.Blocks), counted, slack.MaxInteractionBytes)
	}
}
