package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
)

func TestDebugToken(t *testing.T) {
	t.Parallel()
	fake := graphfake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	client := func(token string) *graph.Client {
		c, err := graph.NewClient(srv.URL+"/v24.0", token, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	info, err := client("EAAG-good").DebugToken(ctx, "EAAG-good")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Valid || info.AppID != graphfake.FakeAppID || !info.HasScope(graph.ScopeMessaging) || info.ExpiresAt != 0 {
		t.Errorf("valid token: %+v", info)
	}

	fake.RevokeToken("EAAG-old")
	info, err = client("EAAG-good").DebugToken(ctx, "EAAG-old")
	if err != nil {
		t.Fatal(err)
	}
	if info.Valid || info.Error == nil || info.Error.Code != 190 {
		t.Errorf("revoked input token: %+v, want invalid with code 190", info)
	}

	// A revoked token inspecting itself is refused outright, as Meta does.
	_, err = client("EAAG-old").DebugToken(ctx, "EAAG-old")
	var ge *graph.Error
	if !errors.As(err, &ge) || ge.Kind != graph.Auth || strings.Contains(err.Error(), "EAAG-old") {
		t.Errorf("revoked token inspecting itself: %v, want an Auth error without the token", err)
	}
}

func TestTokenInfoHasScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		info graph.TokenInfo
		want bool
	}{
		{graph.TokenInfo{GranularScopes: []graph.GranularScope{{Scope: graph.ScopeMessaging}}}, true},
		{graph.TokenInfo{Scopes: []string{graph.ScopeMessaging}}, true},
		{graph.TokenInfo{Scopes: []string{"whatsapp_business_management"}}, false},
		{graph.TokenInfo{}, false},
	}
	for _, tt := range tests {
		if got := tt.info.HasScope(graph.ScopeMessaging); got != tt.want {
			t.Errorf("HasScope(%+v) = %v, want %v", tt.info, got, tt.want)
		}
	}
}
