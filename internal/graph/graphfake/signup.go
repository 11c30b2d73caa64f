package graphfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Embedded Signup and the send rules of a real account (signup.go):
//
//	GET  /dialog/oauth?client_id&redirect_uri&state      302 to redirect_uri?code=…&state=…
//	                                                     (the login grants SetSignupGrant's accounts)
//	GET  /{version}/oauth/access_token?client_id&client_secret&code   {"access_token":…} once per code
//	POST /{version}/{waba_id}/subscribed_apps            {"success":true}
//	GET  /{version}/{waba_id}/phone_numbers              {"data":[{"id",…}]}
//	POST /_fake/window {"to":"…","closed":true}          131047 for free-form sends to "to" (a
//	                                                     phone number or a BSUID)
//
// The token a code gives is accepted, reported by debug_token with the account as target, and
// bound to the account's numbers: a send on one of them with another token gets 190, as a
// revoked token does. A template send with a name the fake does not know gets 132001.

// Defaults of the account the dialog signs up.
const (
	DefaultSignupWABA   = "400000000000001"
	DefaultSignupNumber = "400000000000011"
)

// DefaultTemplates are the template names the fake knows without AddTemplate.
var DefaultTemplates = []string{"hello_world", "resume_conversation"}

// signupState is the fake's Embedded Signup and send-rule state, under Fake.mu.
type signupState struct {
	// accounts are the WhatsApp Business Accounts the fake knows, with their numbers.
	accounts map[string][]string
	// grant are the accounts the next dialog login grants (the one who logs in manages them).
	grant []string
	// codes are the dialog's unused codes.
	codes map[string]bool
	// tokenWABAs are the accounts each signed-up token may manage.
	tokenWABAs map[string][]string
	// numberTokens bind a number to the one token that may send from it.
	numberTokens map[string]string
	subscribed   map[string]bool
	templates    map[string]bool
	closed       map[string]bool
}

func (f *Fake) signupLocked() *signupState {
	if f.signup == nil {
		f.signup = &signupState{accounts: map[string][]string{DefaultSignupWABA: {DefaultSignupNumber}}, grant: []string{DefaultSignupWABA},
			codes: map[string]bool{}, tokenWABAs: map[string][]string{}, numberTokens: map[string]string{},
			subscribed: map[string]bool{}, templates: map[string]bool{}, closed: map[string]bool{}}
		for _, t := range DefaultTemplates {
			f.signup.templates[t] = true
		}
	}
	return f.signup
}

// SetSignupAccount makes wabaID, with numbers, the one WhatsApp Business Account the dialog
// signs up.
func (f *Fake) SetSignupAccount(wabaID string, numbers ...string) {
	f.AddSignupAccount(wabaID, numbers...)
	f.SetSignupGrant(wabaID)
}

// AddSignupAccount makes the WhatsApp Business Account wabaID, with numbers, known to the fake
// (its phone_numbers list), without changing what the dialog grants.
func (f *Fake) AddSignupAccount(wabaID string, numbers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signupLocked().accounts[wabaID] = append([]string(nil), numbers...)
}

// SetSignupGrant sets the accounts the next dialog logins grant, as the Meta user who logs in
// manages them: the token the code gives covers exactly these (debug_token's target_ids).
func (f *Fake) SetSignupGrant(wabaIDs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signupLocked().grant = append([]string(nil), wabaIDs...)
}

// SubscribeCalls counts the POST /{waba_id}/subscribed_apps calls the fake answered, whatever
// their outcome.
func (f *Fake) SubscribeCalls() int {
	n := 0
	for _, r := range f.Requests() {
		if r.Method == http.MethodPost && subscribedAppPath.MatchString(r.Path) {
			n++
		}
	}
	return n
}

// BindNumber makes token the only token that may send from phoneNumberID.
func (f *Fake) BindNumber(phoneNumberID, token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signupLocked().numberTokens[phoneNumberID] = token
}

// AddTemplate makes a template name known.
func (f *Fake) AddTemplate(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signupLocked().templates[name] = true
}

// CloseWindow closes (or reopens) the customer service window of the contact to, a phone
// number or a BSUID: free-form sends to them get 131047. The fake does not know that a phone and
// a BSUID are one person: a send by "recipient" meets the window closed for that BSUID, a send
// with "to" the one closed for that phone.
func (f *Fake) CloseWindow(to string, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signupLocked().closed[windowKey(to)] = closed
}

// Subscribed reports whether the app was subscribed to wabaID's webhooks.
func (f *Fake) Subscribed(wabaID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.signupLocked().subscribed[wabaID]
}

// sendRule is the refusal of a send the rules of the account make: a number bound to another
// token (190), an unknown template (132001), a closed window (131047).
func (f *Fake) sendRule(phoneNumberID, token string, body map[string]any) (Failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.signupLocked()
	if bound, ok := st.numberTokens[phoneNumberID]; ok && bound != token {
		return Failure{HTTPStatus: http.StatusUnauthorized, Code: 190}.withDefaults(), true
	}
	typ, _ := body["type"].(string)
	if typ == "template" {
		tpl, _ := body["template"].(map[string]any)
		name, _ := tpl["name"].(string)
		lang, _ := tpl["language"].(map[string]any)
		code, _ := lang["code"].(string)
		if fl, refused, held := f.templateSendRuleLocked(name, code); held { // templates.go
			return fl, refused
		}
		if !st.templates[name] {
			return Failure{HTTPStatus: http.StatusNotFound, Code: 132001, Message: "(#132001) Template name does not exist in the translation",
				Details: "template name (" + name + ") does not exist"}.withDefaults(), true
		}
		return Failure{}, false
	}
	a := address{}
	a.To, _ = body["to"].(string)
	a.Recipient, _ = body["recipient"].(string)
	if k := a.key(); k != "" && st.closed[k] && typ != "" {
		return Failure{Code: 131047}.withDefaults(), true
	}
	return Failure{}, false
}

var (
	dialogPath        = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/dialog/oauth/?$`)
	accessTokenPath   = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/oauth/access_token/?$`)
	subscribedAppPath = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/([^/]+)/subscribed_apps/?$`)
	phoneNumbersPath  = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/([^/]+)/phone_numbers/?$`)
)

// serveSignup answers the Embedded Signup calls when r is one, and reports whether it was.
func (f *Fake) serveSignup(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	rec := Request{Method: r.Method, Path: p, Kind: KindOther, Time: f.now()}
	var status int
	var resp any
	switch {
	case p == "/_fake/window" && r.Method == http.MethodPost:
		var in struct {
			To     string `json:"to"`
			Closed bool   `json:"closed"`
		}
		if err := decodeStrict(r, &in); err != nil || in.To == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"to":"…","closed":true}`})
			return true
		}
		f.CloseWindow(in.To, in.Closed)
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
		return true
	case dialogPath.MatchString(p):
		q := r.URL.Query()
		redirect, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || redirect.Scheme == "" || q.Get("client_id") == "" {
			status, resp = http.StatusBadRequest, metaError(Failure{Code: 100, Message: "(#100) redirect_uri and client_id are required"}.withDefaults())
			break
		}
		code := "code-" + randomHex(12)
		f.mu.Lock()
		f.signupLocked().codes[code] = true
		f.mu.Unlock()
		v := redirect.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		redirect.RawQuery = v.Encode()
		rec.Status = http.StatusFound
		f.record(rec)
		http.Redirect(w, r, redirect.String(), http.StatusFound)
		return true
	case accessTokenPath.MatchString(p):
		status, resp = f.exchange(r)
	case subscribedAppPath.MatchString(p) && r.Method == http.MethodPost:
		waba := subscribedAppPath.FindStringSubmatch(p)[1]
		status, resp = f.withAccount(r, waba, func(st *signupState) any {
			st.subscribed[waba] = true
			return map[string]any{"success": true}
		})
	case phoneNumbersPath.MatchString(p) && r.Method == http.MethodGet:
		waba := phoneNumbersPath.FindStringSubmatch(p)[1]
		status, resp = f.withAccount(r, waba, func(st *signupState) any {
			data := []any{}
			for _, n := range st.accounts[waba] {
				data = append(data, map[string]any{"id": n, "display_phone_number": displayNumber(n), "verified_name": "Fake Business"})
			}
			return map[string]any{"data": data}
		})
	default:
		return false
	}
	rec.Status = status
	f.record(rec)
	writeJSON(w, status, resp)
	return true
}

// exchange answers GET /oauth/access_token: a dialog's code, once, for a new token.
func (f *Fake) exchange(r *http.Request) (int, any) {
	q := r.URL.Query()
	if q.Get("client_id") == "" || q.Get("client_secret") == "" {
		return http.StatusBadRequest, metaError(Failure{Code: 101, Message: "Error validating application. Invalid application ID or secret."}.withDefaults())
	}
	code := q.Get("code")
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.signupLocked()
	if !st.codes[code] {
		return http.StatusBadRequest, metaError(Failure{Code: 100, Subcode: 36007, Message: "This authorization code has expired or has been used."}.withDefaults())
	}
	delete(st.codes, code)
	return http.StatusOK, map[string]any{"access_token": f.issueLocked(st), "token_type": "bearer"}
}

// SignupToken returns a new token as a completed dialog gives one: it covers the accounts
// SetSignupGrant names and is the only token that may send from their numbers.
func (f *Fake) SignupToken() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issueLocked(f.signupLocked())
}

func (f *Fake) issueLocked(st *signupState) string {
	token := "EAAfake" + randomHex(16)
	if f.accepted == nil {
		f.accepted = map[string]bool{}
	}
	f.accepted[token] = true
	st.tokenWABAs[token] = append([]string(nil), st.grant...)
	for _, waba := range st.grant {
		for _, n := range st.accounts[waba] {
			st.numberTokens[n] = token
		}
	}
	return token
}

// withAccount runs f on the account when the call's token may manage waba.
func (f *Fake) withAccount(r *http.Request, waba string, do func(*signupState) any) (int, any) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !f.acceptsToken(tok) {
		fl := Failure{HTTPStatus: http.StatusUnauthorized, Code: 190}.withDefaults()
		return fl.HTTPStatus, metaError(fl)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.signupLocked()
	if wabas, signed := st.tokenWABAs[tok]; signed && !contains(wabas, waba) {
		return http.StatusForbidden, metaError(Failure{Code: 200, Message: "(#200) Permissions error"}.withDefaults())
	}
	return http.StatusOK, do(st)
}

// targetIDs are the accounts a signed-up token covers, for debug_token's granular scopes.
func (f *Fake) targetIDs(token string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.signupLocked().tokenWABAs[token]...)
}

// displayNumber is a made-up display number ending like the id, as a real one ends like itself.
func displayNumber(id string) string {
	if len(id) < 4 {
		return "+1 555 0100"
	}
	return "+1 555 " + id[len(id)-4:]
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// decodeStrict decodes one JSON object of r's body into v, refusing unknown fields.
func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
