package slack

// Reply is the body of the answer to an interaction: Slack takes it as a
// message that replaces the one clicked, or as an ephemeral one only the
// clicking user sees.
type Reply struct {
	ResponseType    string  `json:"response_type,omitempty"`
	ReplaceOriginal bool    `json:"replace_original"`
	Blocks          []Block `json:"blocks,omitempty"`
	Text            string  `json:"text"`
}

// Refusals: why a click changed nothing, as the clicking user reads it.
const (
	RefusedUnmapped     = "Your Slack account is not linked to a taskhook user, so this answer was not recorded."
	RefusedNotRequester = "Only the person this task asks may answer it; your answer was not recorded."
	RefusedClosed       = "This request is no longer open; your answer was not recorded."
	RefusedInvalid      = "This answer is not one the request takes; it was not recorded."
	RefusedUnavailable  = "The answer could not be recorded just now; try again in a moment."
)

// Replace is the reply that puts m in place of the message clicked.
func Replace(m Message) Reply {
	return Reply{ReplaceOriginal: true, Blocks: m.Blocks, Text: m.Text}
}

// Refusal is the reply that tells only the clicking user why nothing
// changed, leaving the message as it is.
func Refusal(text string) Reply {
	return Reply{ResponseType: "ephemeral", Text: text}
}
