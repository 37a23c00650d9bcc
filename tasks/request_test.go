package tasks

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"
)

// sequentialIDs hands out req_1, req_2 ... and counts the calls.
func sequentialIDs() (func() string, *int) {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("req_%d", n)
	}, &n
}

func TestPrepareRequests(t *testing.T) {
	t.Parallel()
	yesNo := []Option{
		{ID: "yes", Label: "Yes", Style: "primary"},
		{ID: "no", Label: "No", Style: "default"},
	}
	regions := []Option{{ID: "eu", Label: "EU"}, {ID: "us", Label: "US"}}
	cases := []struct {
		name string
		in   InputRequest
		want InputRequest
	}{
		{
			name: "bare question becomes a yes/no confirmation",
			in:   InputRequest{Prompt: "Deploy?"},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Deploy?", Display: wire.DisplayConfirmation, Options: yesNo},
		},
		{
			name: "given id is kept",
			in:   InputRequest{RequestID: "mine", Kind: wire.KindAsk, Prompt: "Deploy?"},
			want: InputRequest{RequestID: "mine", Kind: wire.KindAsk, Prompt: "Deploy?", Display: wire.DisplayConfirmation, Options: yesNo},
		},
		{
			name: "options make a select",
			in:   InputRequest{Prompt: "Region?", Options: regions},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Region?", Display: wire.DisplaySelect, Options: regions},
		},
		{
			name: "options and allowFreeform make a select",
			in:   InputRequest{Prompt: "Region?", Options: regions, AllowFreeform: true},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Region?", Display: wire.DisplaySelect, Options: regions, AllowFreeform: true},
		},
		{
			name: "allowFreeform alone makes text",
			in:   InputRequest{Prompt: "Branch?", AllowFreeform: true},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Branch?", Display: wire.DisplayText, AllowFreeform: true},
		},
		{
			name: "explicit confirmation gets yes/no",
			in:   InputRequest{Prompt: "Deploy?", Display: wire.DisplayConfirmation},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Deploy?", Display: wire.DisplayConfirmation, Options: yesNo},
		},
		{
			name: "explicit confirmation keeps its own options",
			in:   InputRequest{Prompt: "Deploy?", Display: wire.DisplayConfirmation, Options: regions},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Deploy?", Display: wire.DisplayConfirmation, Options: regions},
		},
		{
			name: "explicit text is kept",
			in:   InputRequest{Prompt: "Branch?", Display: wire.DisplayText},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Branch?", Display: wire.DisplayText},
		},
		{
			name: "authorization gets no display and no options",
			in:   InputRequest{Kind: wire.KindAuthorization, Prompt: "Sign in to GitHub", Connection: "github"},
			want: InputRequest{RequestID: "req_1", Kind: wire.KindAuthorization, Prompt: "Sign in to GitHub", Connection: "github"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			newID, _ := sequentialIDs()
			got := PrepareRequests([]InputRequest{c.in}, newID)
			if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
				t.Fatalf("PrepareRequests(%+v)\ngot  %+v\nwant %+v", c.in, got, c.want)
			}
			if got[0].Kind == wire.KindAuthorization {
				return // only the service makes those, through require_authorization
			}
			if err := validateRequest(got[0], "requests[0]"); err != nil {
				t.Errorf("prepared request does not validate: %v", err)
			}
		})
	}
}

func TestPrepareRequestsBatch(t *testing.T) {
	t.Parallel()
	in := []InputRequest{
		{Prompt: "One?"},
		{RequestID: "given", Prompt: "Two?"},
		{Prompt: "Three?", AllowFreeform: true},
	}
	newID, calls := sequentialIDs()
	got := PrepareRequests(in, newID)

	var ids []string
	for _, r := range got {
		ids = append(ids, r.RequestID)
	}
	if want := []string{"req_1", "given", "req_2"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids = %q, want %q", ids, want)
	}
	if *calls != 2 {
		t.Errorf("newID called %d times, want 2 (once per missing id)", *calls)
	}
	if in[0].RequestID != "" || in[0].Display != "" || in[0].Options != nil || in[2].Display != "" {
		t.Errorf("PrepareRequests changed its input: %+v", in)
	}
	if got := PrepareRequests(nil, newID); len(got) != 0 {
		t.Errorf("PrepareRequests(nil) = %+v, want empty", got)
	}
}

func TestInputRequestValidate(t *testing.T) {
	t.Parallel()
	ask := func(edit func(*InputRequest)) InputRequest {
		r := InputRequest{
			RequestID: "req_1", Kind: wire.KindAsk, Prompt: "Region?", Display: wire.DisplaySelect,
			Options: []Option{{ID: "eu", Label: "EU", Style: "primary"}, {ID: "us", Label: "US"}},
		}
		edit(&r)
		return r
	}
	options := func(n int) []Option {
		opts := make([]Option, n)
		for i := range opts {
			opts[i] = Option{ID: fmt.Sprintf("o%d", i), Label: "Option"}
		}
		return opts
	}
	cases := []struct {
		name      string
		req       InputRequest
		wantField string // "" when valid
	}{
		{"select with options", ask(func(*InputRequest) {}), ""},
		{"id of 64 allowed characters", ask(func(r *InputRequest) { r.RequestID = strings.Repeat("aZ0_.:-", 9) + "x" }), ""},
		{"text display", ask(func(r *InputRequest) { r.Display, r.Options = wire.DisplayText, nil }), ""},
		{"freeform without display", ask(func(r *InputRequest) { r.Display, r.Options, r.AllowFreeform = "", nil, true }), ""},
		{"every style", ask(func(r *InputRequest) {
			r.Options = []Option{{ID: "a", Label: "A", Style: "primary"}, {ID: "b", Label: "B", Style: "danger"}, {ID: "c", Label: "C", Style: "default"}}
		}), ""},
		{"25 options", ask(func(r *InputRequest) { r.Options = options(25) }), ""},
		{"expiresAt RFC 3339", ask(func(r *InputRequest) { r.ExpiresAt = "2025-03-14T15:09:26.535Z" }), ""},
		{"expiresAt with offset", ask(func(r *InputRequest) { r.ExpiresAt = "2025-03-14T16:09:26+01:00" }), ""},
		{"authorization with connection (the service makes those)", InputRequest{RequestID: "auth_1", Kind: wire.KindAuthorization, Prompt: "Sign in", Connection: "github"}, "requests[0].kind"},

		{"empty id", ask(func(r *InputRequest) { r.RequestID = "" }), "requests[0].requestId"},
		{"id with a space", ask(func(r *InputRequest) { r.RequestID = "req 1" }), "requests[0].requestId"},
		{"id with a slash", ask(func(r *InputRequest) { r.RequestID = "req/1" }), "requests[0].requestId"},
		{"id not ASCII", ask(func(r *InputRequest) { r.RequestID = "réq" }), "requests[0].requestId"},
		{"id of 65 characters", ask(func(r *InputRequest) { r.RequestID = strings.Repeat("a", 65) }), "requests[0].requestId"},
		{"unknown kind", ask(func(r *InputRequest) { r.Kind = "survey" }), "requests[0].kind"},
		{"empty kind", ask(func(r *InputRequest) { r.Kind = "" }), "requests[0].kind"},
		{"missing prompt", ask(func(r *InputRequest) { r.Prompt = "" }), "requests[0].prompt"},
		{"prompt too long", ask(func(r *InputRequest) { r.Prompt = strings.Repeat("p", 4001) }), "requests[0].prompt"},
		{"bad display", ask(func(r *InputRequest) { r.Display = "dropdown" }), "requests[0].display"},
		{"26 options", ask(func(r *InputRequest) { r.Options = options(26) }), "requests[0].options"},
		{"empty option id", ask(func(r *InputRequest) { r.Options[0].ID = "" }), "requests[0].options[0].id"},
		{"bad option id", ask(func(r *InputRequest) { r.Options[1].ID = "u s" }), "requests[0].options[1].id"},
		{"duplicate option ids", ask(func(r *InputRequest) { r.Options[1].ID = "eu" }), "requests[0].options[1].id"},
		{"missing option label", ask(func(r *InputRequest) { r.Options[0].Label = "" }), "requests[0].options[0].label"},
		{"option label too long", ask(func(r *InputRequest) { r.Options[0].Label = strings.Repeat("l", 201) }), "requests[0].options[0].label"},
		{"bad style", ask(func(r *InputRequest) { r.Options[1].Style = "loud" }), "requests[0].options[1].style"},
		{"authorization without connection", InputRequest{RequestID: "auth_1", Kind: wire.KindAuthorization, Prompt: "Sign in"}, "requests[0].kind"},
		{"ask with no way to answer", ask(func(r *InputRequest) { r.Display, r.Options = "", nil }), "requests[0].options"},
		{"confirmation with no options", ask(func(r *InputRequest) { r.Display, r.Options = wire.DisplayConfirmation, nil }), "requests[0].options"},
		{"select with no options", ask(func(r *InputRequest) { r.Options = nil }), "requests[0].options"},
		{"bad expiresAt", ask(func(r *InputRequest) { r.ExpiresAt = "tomorrow" }), "requests[0].expiresAt"},
		{"expiresAt without zone", ask(func(r *InputRequest) { r.ExpiresAt = "2025-03-14T15:09:26" }), "requests[0].expiresAt"},
		{"expiresAt date only", ask(func(r *InputRequest) { r.ExpiresAt = "2025-03-14" }), "requests[0].expiresAt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := validateRequest(c.req, "requests[0]")
			if c.wantField == "" {
				if err != nil {
					t.Fatalf("validate(%+v) = %v, want nil", c.req, err)
				}
				return
			}
			var ve *problem.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("validate(%+v) = %v, want a *problem.ValidationError", c.req, err)
			}
			if ve.Field != c.wantField {
				t.Errorf("field = %q, want %q (%v)", ve.Field, c.wantField, err)
			}
		})
	}
}
