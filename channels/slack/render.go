package slack

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskhook/taskhook/api/wire"
)

// Action ids start with these: a button answers with its option, an input
// with the text typed into it. A sign-in button is a link: Slack opens it
// in the browser, and its click answers nothing (the provider's redirect
// back to the service finishes the sign-in).
const (
	actionAnswer = "answer:"
	actionText   = "text:"
	actionSignin = "signin:"
)

// ActionRef is what a rendered control names: the task, the request and,
// for a button, the option. It rides in the button's value (the input's
// block_id for typed text). It is no capability: the task is answered only
// when the interaction carrying it is signed by Slack and comes from the
// task's requester.
type ActionRef struct {
	TaskID    string `json:"taskId"`
	RequestID string `json:"requestId"`
	OptionID  string `json:"optionId,omitempty"`
}

func (r ActionRef) encode() string {
	b, _ := json.Marshal(r) // three strings: cannot fail
	return string(b)
}

// Render is a task as a Slack message: a header naming it (label, else
// kind, else "Task"); while it waits for input, each open request's prompt
// with its options as buttons and, for a free-text request, an input that
// sends on Enter, and for a sign-in a Sign in button that opens its
// authorizationUrl; once nothing is open, the outcome: who answered what,
// and how the task ended. asked are requests the task asked before
// (answered requests leave the task): an answer shows its option's label
// when the request is among them, else the option's id, and a sign-in
// among them shows how it ended.
//
// Caller text is escaped, so a prompt can neither mention (<!channel>) nor
// link (<http://x|y>). Text longer than Block Kit takes is cut, and requests
// beyond the block limit, or beyond what a click's payload may carry back
// (MaxMessageEchoBytes), are counted, never shown: Render never fails.
func Render[T any, S ~string](t wire.Task[T, S], asked []wire.InputRequest) Message {
	title := cmp.Or(t.Label, t.Kind, "Task")
	blocks := []Block{{Type: BlockHeader, Text: &Text{Type: TextPlain, Text: cut(title, MaxHeaderChars)}}}
	var open []wire.InputRequest
	if string(t.Status) == wire.StatusInputRequired {
		open = t.InputRequests
	}
	if len(open) > 0 {
		fallback := escape(title) + ": " + escape(open[0].Prompt)
		if len(open) > 1 {
			fallback += fmt.Sprintf(" (and %d more)", len(open)-1)
		}
		text := cutEscaped(fallback, MaxTextChars)
		room := MaxMessageEchoBytes - echoBytes(Message{Blocks: blocks, Text: text})
		for i, r := range open {
			rb := requestBlocks(t.TaskID, r)
			blockRoom, byteRoom := MaxBlocks, room
			if i < len(open)-1 { // keep room for the count of requests that do not fit
				blockRoom--
				byteRoom -= echoBytes(notShown(len(open) - i))
			}
			size := echoBytes(rb)
			if len(blocks)+len(rb) > blockRoom || size > byteRoom {
				blocks = append(blocks, notShown(len(open)-i))
				break
			}
			blocks = append(blocks, rb...)
			room -= size
		}
		return Message{Blocks: blocks, Text: text}
	}
	lines := answerLines(t.Requester, t.InputResponses, asked)
	if len(lines) > 0 {
		blocks = append(blocks, Block{Type: BlockSection, Text: &Text{Type: TextMarkdown,
			Text: cutEscaped(strings.Join(lines, "\n"), MaxSectionChars)}})
	}
	end := outcome(string(t.Status), t.Error, t.CancelReason, t.StatusMessage)
	if end != "" && (len(lines) == 0 || wire.Terminal(t.Status)) {
		blocks = append(blocks, section(end))
	}
	summary := end
	if len(lines) > 0 && !wire.Terminal(t.Status) {
		summary = lines[len(lines)-1]
	}
	return Message{Blocks: blocks, Text: cutEscaped(escape(title)+": "+summary, MaxTextChars)}
}

// requestBlocks are an open request's prompt and controls.
func requestBlocks(taskID string, r wire.InputRequest) []Block {
	if r.Kind == wire.KindAuthorization {
		return signinBlocks(r)
	}
	out := []Block{section(escape(r.Prompt))}
	if r.Kind != wire.KindAsk {
		return out
	}
	if len(r.Options) > 0 {
		buttons := make([]Element, 0, min(len(r.Options), MaxActionButtons))
		for _, o := range r.Options[:min(len(r.Options), MaxActionButtons)] {
			buttons = append(buttons, Element{
				Type:     ElementButton,
				ActionID: actionAnswer + r.RequestID + ":" + o.ID,
				Text:     &Text{Type: TextPlain, Text: cut(o.Label, MaxButtonChars)},
				Value:    ActionRef{TaskID: taskID, RequestID: r.RequestID, OptionID: o.ID}.encode(),
				Style:    buttonStyle(o.Style),
			})
		}
		out = append(out, Block{Type: BlockActions, Elements: buttons})
	}
	if r.AllowFreeform || r.Display == wire.DisplayText {
		out = append(out, Block{
			Type:           BlockInput,
			BlockID:        ActionRef{TaskID: taskID, RequestID: r.RequestID}.encode(),
			DispatchAction: true,
			Label:          &Text{Type: TextPlain, Text: "Your answer"},
			Element: &Element{
				Type:                 ElementTextInput,
				ActionID:             actionText + r.RequestID,
				DispatchActionConfig: &DispatchConfig{TriggerActionsOn: []string{"on_enter_pressed"}},
			},
		})
	}
	return out
}

// signinBlocks are a sign-in request's prompt, until when its link works,
// and a Sign in button that opens the link in the browser. A link Slack
// would refuse (not http or https, longer than a button takes) gets no
// button: the prompt alone, as a request the message cannot answer.
func signinBlocks(r wire.InputRequest) []Block {
	text := escape(r.Prompt)
	if at, err := time.Parse(time.RFC3339Nano, r.ExpiresAt); err == nil {
		// Slack shows the time in the reader's own zone; the fallback is UTC.
		text += fmt.Sprintf("\nThe link works once, until <!date^%d^{date_short_pretty} at {time}|%s>.",
			at.Unix(), at.UTC().Format("2006-01-02 15:04 UTC"))
	}
	out := []Block{section(text)}
	if !linkable(r.AuthorizationURL) {
		return out
	}
	return append(out, Block{Type: BlockActions, Elements: []Element{{
		Type:     ElementButton,
		ActionID: actionSignin + r.RequestID,
		Text:     &Text{Type: TextPlain, Text: "Sign in"},
		URL:      r.AuthorizationURL,
		Style:    "primary",
	}}})
}

// linkable reports whether Slack takes u as a button's url.
func linkable(u string) bool {
	if utf8.RuneCountInString(u) > MaxButtonURL {
		return false
	}
	parsed, err := url.Parse(u)
	return err == nil && (parsed.Scheme == "https" || parsed.Scheme == "http") && parsed.Host != ""
}

// notShown counts the requests a message has no room for.
func notShown(n int) Block {
	return section(fmt.Sprintf("…and %d more requests not shown here", n))
}

// buttonStyle maps an option's style: Slack knows primary and danger; a
// default button has none.
func buttonStyle(style string) string {
	switch style {
	case "primary", "danger":
		return style
	}
	return ""
}

// answerLines say who answered what, through what and when, escaped,
// oldest first: "Answered by <@U012AB> (alice) via Slack at <date>: Yes". An
// answer recorded without who gave it is shown as the requester's.
func answerLines[T any](requester string, answers []wire.InputResponse[T], asked []wire.InputRequest) []string {
	lines := make([]string, 0, len(answers))
answers:
	for _, a := range answers {
		said := a.OptionID
		for _, r := range asked {
			if r.RequestID != a.RequestID {
				continue
			}
			if r.Kind == wire.KindAuthorization {
				lines = append(lines, signinLine(requester, r.Connection, a.OptionID))
				continue answers
			}
			for _, o := range r.Options {
				if o.ID == a.OptionID {
					said = o.Label
				}
			}
		}
		switch {
		case said == "":
			said = a.Text
		case a.Text != "":
			said += " — " + a.Text
		}
		line := "Answered"
		switch a.Action {
		case wire.ActionDecline:
			line, said = "Declined", ""
		case wire.ActionCancel:
			line, said = "Dismissed", ""
		}
		line += answeredBy(requester, a.AnsweredBy, a.SlackUserID, a.Via)
		if at, ok := timeOf(a.AnsweredAt); ok {
			line += " at " + slackDate(at)
		}
		if said != "" {
			line += ": " + escape(said)
		}
		lines = append(lines, line)
	}
	return lines
}

// answeredBy is " by WHO via CHANNEL" of an answer line, escaped: a Slack
// user is mentioned beside the principal it acts as; an answer link names
// nobody.
func answeredBy(requester, by, slackUser, via string) string {
	out := ""
	switch {
	case by == "":
		out = " by " + escape(requester)
	case by == wire.AnsweredByAnswerLink:
	case slackUser != "" && validUserID(slackUser):
		out = " by <@" + slackUser + "> (" + escape(by) + ")"
	default:
		out = " by " + escape(by)
	}
	if via == "" {
		return out
	}
	name, ok := channelNames[via]
	if !ok {
		name = escape(via)
	}
	return out + " via " + name
}

// channelNames are the channels an answer comes through, as a reader names them.
var channelNames = map[string]string{
	wire.ViaAPI: "API", wire.ViaConsole: "console", wire.ViaAnswerLink: "answer link", wire.ViaSlack: "Slack",
	wire.ViaMCP: "MCP", wire.ViaA2A: "A2A", wire.ViaSignIn: "sign-in",
}

// timeOf reads a timestamp of any Go type that encodes as an RFC 3339
// string (the server's, the client's, raw JSON); false for any other.
func timeOf[T any](v T) (time.Time, bool) {
	raw, err := json.Marshal(v)
	var s string
	if err != nil || json.Unmarshal(raw, &s) != nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	return at, err == nil && !at.IsZero()
}

// slackDate shows a time in each reader's own time zone, with the UTC time
// as the text of clients that cannot.
func slackDate(at time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", at.Unix(), at.UTC().Format("2006-01-02 15:04 UTC"))
}

// signinLine says how a sign-in ended, escaped. The outcomes are the
// service's own (authorized, declined, failed, expired).
func signinLine(requester, connection, outcome string) string {
	who, to := escape(requester), escape(connection)
	switch outcome {
	case "authorized":
		return who + " signed in to " + to
	case "declined":
		return who + " declined to sign in to " + to
	case "expired":
		return "The sign-in link for " + to + " expired"
	}
	return "The sign-in to " + to + " did not complete"
}

// outcome is how the task stands once nothing is open, escaped.
func outcome(status string, taskErr *wire.TaskError, cancelReason, statusMessage string) string {
	switch status {
	case wire.StatusCompleted:
		return "Completed"
	case wire.StatusFailed:
		if taskErr != nil && taskErr.Message != "" {
			return "Failed: " + escape(taskErr.Message)
		}
		return "Failed"
	case wire.StatusCancelled:
		if cancelReason != "" {
			return "Cancelled: " + escape(cancelReason)
		}
		return "Cancelled"
	case wire.StatusWorking:
		if statusMessage != "" {
			return "Working: " + escape(statusMessage)
		}
		return "Working"
	}
	return ""
}

// section is a mrkdwn section of text already escaped.
func section(escaped string) Block {
	return Block{Type: BlockSection, Text: &Text{Type: TextMarkdown, Text: cutEscaped(escaped, MaxSectionChars)}}
}

// escape makes caller text inert in mrkdwn: Slack reads <...> as a link or
// a mention, and & starts an entity.
func escape(s string) string {
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

const ellipsis = "…"

// cut keeps plain text within max characters, ending with an ellipsis when
// it was longer.
func cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + ellipsis
		}
		n++
	}
	return s
}

// cutEscaped is cut for escaped mrkdwn: it never splits an entity, which
// would leave a bare & in the text.
func cutEscaped(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	out := cut(s, max)
	body := strings.TrimSuffix(out, ellipsis)
	if amp := strings.LastIndexByte(body, '&'); amp >= 0 && !strings.Contains(body[amp:], ";") {
		body = body[:amp]
	}
	return body + ellipsis
}
