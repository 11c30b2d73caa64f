package graphfake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/graph"
)

const (
	bsuid  = "US.13491208655302741918"
	parent = "US.ENT.11815799212886844830"
)

// answered is what the fake answered to a send: the status, Meta's error code when it refused,
// the contacts when it sent.
type answered struct {
	Status   int
	Code     int
	Contacts []map[string]string
}

// postSend posts body as a send with the fake's token and reads the answer.
func postSend(t *testing.T, url, body string) answered {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v24.0/"+pnid+"/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error *struct {
			Code      int    `json:"code"`
			Message   string `json:"message"`
			FBTraceID string `json:"fbtrace_id"`
		} `json:"error"`
		Contacts []map[string]string `json:"contacts"`
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	a := answered{Status: resp.StatusCode, Contacts: out.Contacts}
	if out.Error != nil {
		a.Code = out.Error.Code
		if out.Error.Message == "" || out.Error.FBTraceID == "" {
			t.Errorf("error body %+v is not Meta's shape", out.Error)
		}
	}
	if resp.StatusCode == http.StatusOK && (len(out.Messages) != 1 || !wamidRE.MatchString(out.Messages[0].ID)) {
		t.Errorf("answer messages %+v; want one wamid", out.Messages)
	}
	return a
}

// TestSendByRecipient: a send goes by "to", by "recipient" or by both as Meta takes them; a
// send naming nobody, or naming them in the wrong field, is refused with code 100; an
// authentication template by BSUID alone gets 131062; and the record names the recipient.
func TestSendByRecipient(t *testing.T) {
	t.Parallel()
	text := `"type":"text","text":{"body":"hi"}`
	template := func(name string) string {
		return `"type":"template","template":{"name":"` + name + `","language":{"code":"en_US"},"components":[` +
			`{"type":"body","parameters":[{"type":"text","text":"482913"}]},` +
			`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"482913"}]}]}`
	}
	cases := []struct {
		name          string
		address       string // the body's address fields, with a trailing comma
		rest          string
		want          answered
		wantRecipient string
	}{
		{"recipient alone", `"recipient":"` + bsuid + `",`, text,
			answered{Status: 200, Contacts: []map[string]string{{"input": bsuid, "user_id": bsuid}}}, bsuid},
		{"parent recipient alone", `"recipient":"` + parent + `",`, text,
			answered{Status: 200, Contacts: []map[string]string{{"input": parent, "user_id": parent}}}, parent},
		{"to and recipient: to wins", `"to":"` + to + `","recipient":"` + bsuid + `",`, text,
			answered{Status: 200, Contacts: []map[string]string{{"input": to, "wa_id": to}}}, bsuid},
		{"to alone", `"to":"` + to + `",`, text,
			answered{Status: 200, Contacts: []map[string]string{{"input": to, "wa_id": to}}}, ""},
		{"neither", ``, text, answered{Status: 400, Code: 100}, ""},
		{"BSUID in to", `"to":"` + bsuid + `",`, text, answered{Status: 400, Code: 100}, ""},
		{"parent BSUID in to", `"to":"` + parent + `",`, text, answered{Status: 400, Code: 100}, ""},
		{"BSUID in to and recipient", `"to":"` + bsuid + `","recipient":"` + bsuid + `",`, text, answered{Status: 400, Code: 100}, bsuid},
		{"empty to beside a recipient", `"to":"","recipient":"` + bsuid + `",`, text, answered{Status: 400, Code: 100}, bsuid},
		{"phone in recipient", `"recipient":"` + to + `",`, text, answered{Status: 400, Code: 100}, to},
		{"empty recipient", `"recipient":"",`, text, answered{Status: 400, Code: 100}, ""},
		{"authentication template by recipient", `"recipient":"` + bsuid + `",`, template("auth_code"), answered{Status: 400, Code: 131062}, bsuid},
		{"authentication template to the phone", `"to":"` + to + `",`, template("auth_code"),
			answered{Status: 200, Contacts: []map[string]string{{"input": to, "wa_id": to}}}, ""},
		{"authentication template to both: to wins", `"to":"` + to + `","recipient":"` + bsuid + `",`, template("auth_code"),
			answered{Status: 200, Contacts: []map[string]string{{"input": to, "wa_id": to}}}, bsuid},
		{"utility template with the same body by recipient", `"recipient":"` + bsuid + `",`, template("order_link"),
			answered{Status: 200, Contacts: []map[string]string{{"input": bsuid, "user_id": bsuid}}}, bsuid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := start(t)
			f.PutTemplate(Template{WABAID: "w1", Name: "auth_code", Language: "en_US", Status: "APPROVED", Category: "AUTHENTICATION"})
			f.PutTemplate(Template{WABAID: "w1", Name: "order_link", Language: "en_US", Status: "APPROVED", Category: "UTILITY"})
			got := postSend(t, srv.URL, `{"messaging_product":"whatsapp",`+tc.address+tc.rest+`}`)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want, +got):\n%s", diff)
			}
			rs := f.Requests()
			if len(rs) != 1 || rs[0].Kind != KindSend || rs[0].Status != tc.want.Status {
				t.Fatalf("requests = %+v; want the one send", rs)
			}
			if diff := cmp.Diff(tc.wantRecipient, rs[0].Recipient); diff != "" {
				t.Errorf("recorded recipient (-want, +got):\n%s", diff)
			}
			if ok := tc.want.Status == http.StatusOK; (len(f.Sends()) == 1) != ok || (rs[0].MessageID != "") != ok {
				t.Errorf("Sends = %d, message id %q; want a send only when accepted", len(f.Sends()), rs[0].MessageID)
			}
		})
	}
}

// TestClientByRecipient: the graph client's send by BSUID goes through the fake, which answers
// the user id; Meta's 131062 reaches the client as a permanent error.
func TestClientByRecipient(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	f.PutTemplate(Template{WABAID: "w1", Name: "auth_code", Language: "en_US", Status: "APPROVED", Category: graph.CategoryAuthentication})
	c := client(t, srv.URL+"/v24.0", token)
	ctx := context.Background()
	res, err := c.Send(ctx, pnid, graph.Message{Recipient: bsuid, Type: "text", Text: &graph.Text{Body: "hi"}})
	if err != nil {
		t.Fatalf("send by recipient: %v", err)
	}
	if diff := cmp.Diff(graph.SendResult{MessageID: res.MessageID, UserID: bsuid}, res); diff != "" || !wamidRE.MatchString(res.MessageID) {
		t.Errorf("result (-want, +got):\n%s", diff)
	}
	otp := graph.Message{Recipient: bsuid, Type: "template", Template: &graph.Template{Name: "auth_code", Language: graph.Language{Code: "en_US"}}}
	_, err = c.Send(ctx, pnid, otp)
	var ge *graph.Error
	if !errors.As(err, &ge) || ge.Code != 131062 || ge.HTTPStatus != 400 || graph.Classify(err) != graph.Permanent || graph.IsRetryable(err) {
		t.Errorf("authentication template by recipient = %v; want 131062, permanent", err)
	}
	if strings.Contains(err.Error(), bsuid) {
		t.Errorf("error %q quotes the BSUID", err)
	}
	otp.To = to
	if _, err := c.Send(ctx, pnid, otp); err != nil {
		t.Errorf("authentication template to the phone: %v", err)
	}
	var got []string
	for _, r := range f.Sends() {
		got = append(got, r.Recipient)
	}
	if diff := cmp.Diff([]string{bsuid, bsuid}, got); diff != "" {
		t.Errorf("recorded recipients of the sends (-want, +got):\n%s", diff)
	}
}

// TestWindowByRecipient: a window closed for a BSUID refuses free-form sends by that recipient
// with 131047, and leaves the phone's window alone, as the fake cannot know they are one person.
func TestWindowByRecipient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, closed, address string
		want                  answered
	}{
		{"recipient of a closed window", bsuid, `"recipient":"` + bsuid + `"`, answered{Status: 400, Code: 131047}},
		{"another recipient", bsuid, `"recipient":"US.99"`, answered{Status: 200, Contacts: []map[string]string{{"input": "US.99", "user_id": "US.99"}}}},
		{"phone of a closed window", "+1 650-555-1234", `"to":"` + to + `"`, answered{Status: 400, Code: 131047}},
		{"phone beside the closed recipient: to wins", bsuid, `"to":"` + to + `","recipient":"` + bsuid + `"`,
			answered{Status: 200, Contacts: []map[string]string{{"input": to, "wa_id": to}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := start(t)
			f.CloseWindow(tc.closed, true)
			got := postSend(t, srv.URL, `{"messaging_product":"whatsapp",`+tc.address+`,"type":"text","text":{"body":"hi"}}`)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestRequestsServeRecipient: GET /_fake/requests names the recipient of a send by BSUID and,
// as before, leaves the field out for a send to a phone number.
func TestRequestsServeRecipient(t *testing.T) {
	t.Parallel()
	_, srv := start(t)
	postSend(t, srv.URL, `{"messaging_product":"whatsapp","recipient":"`+bsuid+`","type":"text","text":{"body":"hi"}}`)
	postSend(t, srv.URL, `{"messaging_product":"whatsapp","to":"`+to+`","type":"text","text":{"body":"hi"}}`)
	resp, err := http.Get(srv.URL + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Requests []map[string]any `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Requests) != 2 {
		t.Fatalf("GET /_fake/requests = %+v, %v", got, err)
	}
	recipient, hasSecond := got.Requests[1]["recipient"]
	if diff := cmp.Diff([]any{bsuid, nil}, []any{got.Requests[0]["recipient"], recipient}); diff != "" || hasSecond {
		t.Errorf("recipients served (-want, +got):\n%s", diff)
	}
}
