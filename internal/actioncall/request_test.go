package actioncall_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/actioncall"
)

// sampleRequest is a booking as the worker would build it.
func sampleRequest() actioncall.Request {
	return actioncall.Request{
		ActionID: "act_01HZX3K9", TenantID: "acme-bus", Intent: "create_booking",
		Data:           map[string]any{"bus": "01", "customer": "Pak Agus & Co", "date": "2026-03-01", "price": 15000000},
		From:           actioncall.From{WaID: "6281234567890", Name: "Budi", Role: "admin"},
		ConversationID: "acme-bus_1234_6281234567890",
		RequestedAt:    time.Date(2026, 2, 20, 15, 4, 5, 987654321, time.FixedZone("WIB", 7*3600)),
	}
}

func TestRequestMarshalJSON(t *testing.T) {
	t.Parallel()
	noData := sampleRequest()
	noData.Data = nil
	cases := []struct {
		name string
		req  actioncall.Request
		want string
	}{
		{"booking", sampleRequest(), `{"action_id":"act_01HZX3K9","tenant_id":"acme-bus","intent":"create_booking",` +
			`"data":{"bus":"01","customer":"Pak Agus \u0026 Co","date":"2026-03-01","price":15000000},` +
			`"from":{"wa_id":"6281234567890","name":"Budi","role":"admin"},` +
			`"conversation_id":"acme-bus_1234_6281234567890","requested_at":"2026-02-20T08:04:05Z"}`},
		{"nil data is an empty object", noData, `{"action_id":"act_01HZX3K9","tenant_id":"acme-bus","intent":"create_booking",` +
			`"data":{},"from":{"wa_id":"6281234567890","name":"Budi","role":"admin"},` +
			`"conversation_id":"acme-bus_1234_6281234567890","requested_at":"2026-02-20T08:04:05Z"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("body (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestRequestMarshalJSONIsStable(t *testing.T) {
	t.Parallel()
	first, _ := json.Marshal(sampleRequest())
	direct, _ := sampleRequest().MarshalJSON()
	if string(direct) != string(first) {
		t.Fatalf("MarshalJSON and json.Marshal differ:\n%s\n%s", direct, first)
	}
	for range 20 {
		again, _ := json.Marshal(sampleRequest())
		if string(again) != string(first) {
			t.Fatalf("two encodings of one request differ:\n%s\n%s", first, again)
		}
	}
}

func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(sampleRequest())
	if err != nil {
		t.Fatal(err)
	}
	var got actioncall.Request
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := sampleRequest()
	want.RequestedAt = want.RequestedAt.Truncate(time.Second).UTC()
	want.Data["price"] = float64(15000000)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want, +got):\n%s", diff)
	}
}

func TestRequestMarshalJSONRejectsUnencodableData(t *testing.T) {
	t.Parallel()
	r := sampleRequest()
	r.Data = map[string]any{"x": math.NaN()}
	if _, err := json.Marshal(r); err == nil {
		t.Error("NaN in data encoded without error")
	}
}
