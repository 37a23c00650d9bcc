package slack

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func form(payload string) []byte {
	return []byte("payload=" + url.QueryEscape(payload))
}

// TestParseInteraction reads the payloads Slack sends for the controls
// Render makes, and leaves others out: a Sign in link among them, whose
// click answers nothing.
func TestParseInteraction(t *testing.T) {
	button := `{"type":"block_actions","user":{"id":"U012AB","username":"alice"},"actions":[
		{"type":"button","action_id":"answer:deploy:yes","block_id":"b1",
		 "value":"{\"taskId\":\"task_1\",\"requestId\":\"deploy\",\"optionId\":\"yes\"}","action_ts":"1"},
		{"type":"button","action_id":"someone_elses","value":"x"},
		{"type":"button","action_id":"signin:req_1","block_id":"b2","text":{"type":"plain_text","text":"Sign in"},"action_ts":"2"},
		{"type":"plain_text_input","action_id":"text:why","block_id":"{\"taskId\":\"task_1\",\"requestId\":\"why\"}","value":"flaky <test>"}]}`
	got, err := ParseInteraction(form(button))
	if err != nil {
		t.Fatal(err)
	}
	want := Interaction{Type: TypeBlockActions, UserID: "U012AB", Answers: []Answer{
		{ActionRef: ActionRef{TaskID: "task_1", RequestID: "deploy", OptionID: "yes"}},
		{ActionRef: ActionRef{TaskID: "task_1", RequestID: "why"}, Text: "flaky <test>"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	challenge, err := ParseInteraction([]byte(`{"type":"url_verification","token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`))
	if err != nil || challenge.Type != TypeURLVerification || challenge.Challenge != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("url_verification: %+v %v", challenge, err)
	}
	other, err := ParseInteraction(form(`{"type":"view_submission","user":{"id":"U1"}}`))
	if err != nil || other.Type != "view_submission" || len(other.Answers) != 0 {
		t.Fatalf("another type: %+v %v", other, err)
	}
	for name, body := range map[string][]byte{
		"empty":            nil,
		"no payload":       []byte("token=x"),
		"two payloads":     []byte("payload=%7B%7D&payload=%7B%7D"),
		"not JSON":         form("{"),
		"no type":          form(`{"user":{"id":"U1"}}`),
		"no user":          form(`{"type":"block_actions","actions":[]}`),
		"no challenge":     []byte(`{"type":"url_verification"}`),
		"button, no ref":   form(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"type":"button","action_id":"answer:a:b","value":"yes"}]}`),
		"button, no opt":   form(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"type":"button","action_id":"answer:a:b","value":"{\"taskId\":\"t\",\"requestId\":\"r\"}"}]}`),
		"input, with opt":  form(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"type":"plain_text_input","action_id":"text:r","block_id":"{\"taskId\":\"t\",\"requestId\":\"r\",\"optionId\":\"o\"}","value":"x"}]}`),
		"too many actions": form(`{"type":"block_actions","user":{"id":"U1"},"actions":[` + strings.Repeat(`{},`, MaxActions) + `{}]}`),
	} {
		if _, err := ParseInteraction(body); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzSlackPayload: no body makes the parser panic or fail other than
// ErrMalformed, and every answer it reads names a task and a request, with an
// option or typed text, never both.
func FuzzSlackPayload(f *testing.F) {
	f.Add(form(`{"type":"block_actions","user":{"id":"U012AB"},"actions":[{"type":"button","action_id":"answer:deploy:yes","value":"{\"taskId\":\"task_1\",\"requestId\":\"deploy\",\"optionId\":\"yes\"}"}]}`))
	f.Add(form(`{"type":"block_actions","user":{"id":"U012AB"},"actions":[{"type":"plain_text_input","action_id":"text:why","block_id":"{\"taskId\":\"task_1\",\"requestId\":\"why\"}","value":"because"}]}`))
	f.Add([]byte(`{"type":"url_verification","challenge":"c"}`))
	f.Add([]byte("payload=%7B%22type%22%3A%22block_actions%22%7D"))
	f.Add([]byte("token=x&team_id=T1&command=%2Fwebhook-collect&text="))
	f.Add([]byte("payload=%zz"))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := ParseInteraction(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, not ErrMalformed", err)
			}
			return
		}
		if in.Type == "" {
			t.Fatal("an interaction without a type")
		}
		for _, a := range in.Answers {
			if a.TaskID == "" || a.RequestID == "" || (a.OptionID != "" && a.Text != "") {
				t.Fatalf("an answer that is neither a click nor typed text: %+v", a)
			}
		}
	})
}
