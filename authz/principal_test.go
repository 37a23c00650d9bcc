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
	tests := []struct {
		name  string
		p     Principal
		owner string
		want  bool
	}{
		{name: "owner", p: Principal{ID: "alice"}, owner: "alice", want: true},
		{name: "someone else", p: Principal{ID: "bob"}, owner: "alice", want: false},
		{name: "admin of someone else", p: Principal{ID: "bob", Scopes: admin}, owner: "alice", want: true},
		{name: "other scopes do not help", p: Principal{ID: "bob", Scopes: []string{"read"}}, owner: "alice", want: false},
		{name: "issuer namespaced owner", p: Principal{ID: "https://idp.example#alice"}, owner: "https://idp.example#alice", want: true},
		{name: "same sub other issuer", p: Principal{ID: "https://evil.example#alice"}, owner: "https://idp.example#alice", want: false},
		{name: "bare sub is not the namespaced owner", p: Principal{ID: "alice"}, owner: "https://idp.example#alice", want: false},
		{name: "zero principal and empty owner", p: Principal{}, owner: "", want: false},
		{name: "zero principal", p: Principal{}, owner: "alice", want: false},
		{name: "admin and empty owner", p: Principal{ID: "root", Scopes: admin}, owner: "", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.CanAccess(tc.owner); got != tc.want {
				t.Errorf("%+v.CanAccess(%q) = %v, want %v", tc.p, tc.owner, got, tc.want)
			}
		})
	}
}

func TestPrincipalCanActFor(t *testing.T) {
	t.Parallel()
	const idp = "https://idp.example#"
	tests := []struct {
		name      string
		p         Principal
		requester string
		want      bool
	}{
		{name: "itself", p: Principal{ID: "alice"}, requester: "alice", want: true},
		{name: "another, no grant", p: Principal{ID: "mallory"}, requester: "alice", want: false},
		{name: "admin is not delegate", p: Principal{ID: "root", Scopes: []string{"admin"}}, requester: "alice", want: false},
		{name: "delegate scope", p: Principal{ID: "agent", Scopes: []string{"delegate"}}, requester: "alice", want: true},
		{name: "delegate among others", p: Principal{ID: "agent", Scopes: []string{"read", "delegate"}}, requester: "alice", want: true},
		{name: "a scope like delegate", p: Principal{ID: "agent", Scopes: []string{"delegate:read", "Delegate"}}, requester: "alice", want: false},
		{name: "listed in act_for", p: Principal{ID: "agent", ActFor: []string{"alice", "bob"}}, requester: "bob", want: true},
		{name: "not listed in act_for", p: Principal{ID: "agent", ActFor: []string{"alice"}}, requester: "bob", want: false},
		{name: "act_for is exact", p: Principal{ID: "agent", ActFor: []string{"alice"}}, requester: "alice2", want: false},
		{name: "namespaced act_for", p: Principal{ID: idp + "agent", ActFor: []string{idp + "alice"}}, requester: idp + "alice", want: true},
		{name: "bare sub is not the namespaced one", p: Principal{ID: idp + "agent", ActFor: []string{idp + "alice"}}, requester: "alice", want: false},
		{name: "same sub of another issuer", p: Principal{ID: idp + "agent", ActFor: []string{idp + "alice"}}, requester: "https://evil.example#alice", want: false},
		{name: "empty requester", p: Principal{ID: "agent", Scopes: []string{"delegate"}}, requester: "", want: false},
		{name: "zero principal", p: Principal{Scopes: []string{"delegate"}, ActFor: []string{"alice"}}, requester: "alice", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.CanActFor(tc.requester); got != tc.want {
				t.Errorf("%+v.CanActFor(%q) = %v, want %v", tc.p, tc.requester, got, tc.want)
			}
		})
	}
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
