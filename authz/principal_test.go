package authz

import (
	"context"
	"testing"
)

func TestPrincipalAdmin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scopes []string
		want   bool
	}{
		{name: "no scopes", scopes: nil, want: false},
		{name: "other scopes", scopes: []string{"read", "write"}, want: false},
		{name: "admin among others", scopes: []string{"read", "admin"}, want: true},
		{name: "admin alone", scopes: []string{"admin"}, want: true},
		{name: "case matters", scopes: []string{"Admin"}, want: false},
		{name: "prefix is not admin", scopes: []string{"admin:read"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := Principal{ID: "alice", Scopes: tc.scopes}
			if got := p.Admin(); got != tc.want {
				t.Errorf("Admin() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPrincipalCanAccess(t *testing.T) {
	t.Parallel()
	admin := []string{"admin"}
	askPrincipals(t, "CanAccess", Principal.CanAccess, []principalCase{
		{name: "owner", p: Principal{ID: "alice"}, other: "alice", want: true},
		{name: "someone else", p: Principal{ID: "bob"}, other: "alice", want: false},
		{name: "admin of someone else", p: Principal{ID: "bob", Scopes: admin}, other: "alice", want: true},
		{name: "other scopes do not help", p: Principal{ID: "bob", Scopes: []string{"read"}}, other: "alice", want: false},
		{name: "issuer namespaced owner", p: Principal{ID: "https://idp.example#alice"}, other: "https://idp.example#alice", want: true},
		{name: "same sub other issuer", p: Principal{ID: "https://evil.example#alice"}, other: "https://idp.example#alice", want: false},
		{name: "bare sub is not the namespaced owner", p: Principal{ID: "alice"}, other: "https://idp.example#alice", want: false},
		{name: "zero principal and empty owner", p: Principal{}, other: "", want: false},
		{name: "zero principal", p: Principal{}, other: "alice", want: false},
		{name: "admin and empty owner", p: Principal{ID: "root", Scopes: admin}, other: "", want: true},
	})
}

// principalCase is one question put to a Principal about another principal
// (the owner of an object, or a requester to name).
type principalCase struct {
	name  string
	p     Principal
	other string
	want  bool
}

func askPrincipals(t *testing.T, method string, ask func(Principal, string) bool, tests []principalCase) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ask(tc.p, tc.other); got != tc.want {
				t.Errorf("%+v.%s(%q) = %v, want %v", tc.p, method, tc.other, got, tc.want)
			}
		})
	}
}

func TestPrincipalCanActFor(t *testing.T) {
	t.Parallel()
	const idp = "https://idp.example#"
	askPrincipals(t, "CanActFor", Principal.CanActFor, []principalCase{
		{name: "itself", p: Principal{ID: "alice"}, other: "alice", want: true},
		{name: "another, no grant", p: Principal{ID: "mallory"}, other: "alice", want: false},
		{name: "admin is not delegate", p: Principal{ID: "root", Scopes: []string{"admin"}}, other: "alice", want: false},
		{name: "delegate scope", p: Principal{ID: "agent", Scopes: []string{"delegate"}}, other: "alice", want: true},
		{name: "delegate among others", p: Principal{ID: "agent", Scopes: []string{"read", "delegate"}}, other: "alice", want: true},
		{name: "a scope like delegate", p: Principal{ID: "agent", Scopes: []string{"delegate:read", "Delegate"}}, other: "alice", want: false},
		{name: "listed in act_for", p: Principal{ID: "agent", ActFor: []string{"alice", "bob"}}, other: "bob", want: true},
		{name: "not listed in act_for", p: Principal{ID: "agent", ActFor: []string{"alice"}}, other: "bob", want: false},
		{name: "act_for is exact", p: Principal{ID: "agent", ActFor: []string{"alice"}}, other: "alice2", want: false},
		{name: "namespaced act_for", p: Principal{ID: idp + "agent", ActFor: []string{idp + "alice"}}, other: idp + "alice", want: true},
		{name: "bare sub is not the namespaced one", p: Principal{ID: idp + "agent", ActFor: []string{idp + "alice"}}, other: "alice", want: false},
		{name: "same sub of another issuer", p: Principal{ID: idp + "agent", ActFor: []string{idp + "alice"}}, other: "https://evil.example#alice", want: false},
		{name: "empty requester", p: Principal{ID: "agent", Scopes: []string{"delegate"}}, other: "", want: false},
		{name: "zero principal", p: Principal{Scopes: []string{"delegate"}, ActFor: []string{"alice"}}, other: "alice", want: false},
	})
}

func TestPrincipalContext(t *testing.T) {
	t.Parallel()
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("FromContext on an empty context reported a principal")
	}
	want := Principal{ID: "alice", Scopes: []string{"admin"}}
	ctx := WithPrincipal(context.Background(), want)
	got, ok := FromContext(ctx)
	if !ok {
		t.Fatal("FromContext lost the principal")
	}
	if got.ID != want.ID || !got.Admin() {
		t.Errorf("FromContext = %+v, want %+v", got, want)
	}
	// An inner principal shadows an outer one.
	inner := WithPrincipal(ctx, Principal{ID: "bob"})
	if got, _ := FromContext(inner); got.ID != "bob" {
		t.Errorf("inner FromContext = %+v, want bob", got)
	}
}
