// Package slack is everything taskhook says to and hears from Slack: a task
// rendered as a Block Kit message, the interaction payloads a click or a
// typed answer sends (their signature check is package slacksig), the map of
// Slack users to principals, and where the bot may post for whom
// (Destinations).
//
// Rendering is pure, so whoever posts or updates a message (the interaction
// reply, a notification) renders the same task the same way. The package
// imports api/wire only, a leaf, so any layer may use it: endpoints checks a
// Slack endpoint against Destinations when it is registered, and callbacks
// renders the message it posts to one. It imports neither of them, nor any
// other package of ours: the direction is one way.
package slack

// Message is a Block Kit message: its blocks and the plain text Slack shows
// in notifications and where blocks cannot be shown.
type Message struct {
	Blocks []Block `json:"blocks"`
	Text   string  `json:"text"`
}

// Block is one layout block. Only the fields of its Type are set: header
// (Text), section (Text), actions (Elements) and input (Element, Label,
// DispatchAction).
type Block struct {
	Type           string    `json:"type"`
	BlockID        string    `json:"block_id,omitempty"`
	Text           *Text     `json:"text,omitempty"`
	Elements       []Element `json:"elements,omitempty"`
	Element        *Element  `json:"element,omitempty"`
	Label          *Text     `json:"label,omitempty"`
	DispatchAction bool      `json:"dispatch_action,omitempty"`
}

// Text is a text object: plain_text or mrkdwn.
type Text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Element is an interactive element: a button or a plain_text_input. A
// button with a URL is a link Slack opens in the browser.
type Element struct {
	Type                 string          `json:"type"`
	ActionID             string          `json:"action_id"`
	Text                 *Text           `json:"text,omitempty"`
	Value                string          `json:"value,omitempty"`
	URL                  string          `json:"url,omitempty"`
	Style                string          `json:"style,omitempty"`
	Placeholder          *Text           `json:"placeholder,omitempty"`
	DispatchActionConfig *DispatchConfig `json:"dispatch_action_config,omitempty"`
}

// DispatchConfig says when an input in a message sends its value.
type DispatchConfig struct {
	TriggerActionsOn []string `json:"trigger_actions_on"`
}

// Block and element types, and text object types.
const (
	BlockHeader  = "header"
	BlockSection = "section"
	BlockActions = "actions"
	BlockInput   = "input"

	ElementButton    = "button"
	ElementTextInput = "plain_text_input"

	TextPlain    = "plain_text"
	TextMarkdown = "mrkdwn"
)

// Block Kit's limits that a task's text can reach. Longer text is cut, never
// refused: a message must always render.
const (
	MaxHeaderChars   = 150
	MaxSectionChars  = 3000
	MaxButtonChars   = 75
	MaxButtonURL     = 3000 // the longest url a button takes, in characters
	MaxActionButtons = 25
	MaxBlocks        = 50
	MaxTextChars     = 3000 // the fallback text; Slack takes more, notifications show less
)
