package actioncall

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 30 ", 30 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"999999999", maxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(72 * time.Hour).Format(http.TimeFormat), maxRetryAfter},
		{"soon", 0},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		want   Kind
	}{
		{200, Done}, {202, Done}, {299, Done},
		{400, Refused}, {401, Refused}, {403, Refused}, {404, Refused}, {409, Refused}, {422, Refused}, {499, Refused},
		{408, Retry}, {429, Retry}, {500, Retry}, {502, Retry}, {503, Retry}, {504, Retry}, {599, Retry},
		{101, Failed}, {301, Failed}, {307, Failed}, {308, Failed}, {600, Failed},
	}
	for _, tc := range cases {
		if got := classifyStatus(tc.status); got != tc.want {
			t.Errorf("classifyStatus(%d) = %s, want %s", tc.status, got, tc.want)
		}
	}
}
