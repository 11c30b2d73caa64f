package operator

import "testing"

func TestRoundFloats(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"latency_p95_ms":242.49999999999997,"n":3}`, `{"latency_p95_ms":242.5,"n":3}`},
		{`{"b":0.99671,"a":[1.23456,{"x":"242.49999999999997"}],"c":null,"d":true}`, `{"b":0.997,"a":[1.235,{"x":"242.49999999999997"}],"c":null,"d":true}`},
		{`{"e":1e-7,"f":12345678901234567890,"g":"<&>"}`, `{"e":0,"f":12345678901234567890,"g":"<&>"}`},
		{`[]`, `[]`},
	} {
		got, err := RoundFloats([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("RoundFloats(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := RoundFloats([]byte(`{"a":`)); err == nil {
		t.Error("a truncated document was accepted")
	}
}
