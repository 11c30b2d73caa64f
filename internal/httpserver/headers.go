package httpserver

import "net/http"

// Browser is how one kind of answer a browser renders is protected: the security headers of
// every HTML page and every file wapipe serves to a browser are set by SetSecurityHeaders alone,
// so that a page cannot lack one another has (the api's signup page once lacked nosniff).
type Browser struct {
	// CSP is the answer's Content-Security-Policy.
	CSP string
	// Cache is its Cache-Control.
	Cache string
	// Page is an HTML page of wapipe's own: no other site may frame it (its buttons must not be
	// clickjacked) and its links send no referrer (its URL may carry a state or a conversation).
	Page bool
}

// ContactFile is a file someone else made (a contact's image), served as it is: a browser runs
// nothing in it (sandbox) and no cache keeps it.
var ContactFile = Browser{CSP: "sandbox", Cache: "private, no-store"}

// SetSecurityHeaders sets b's headers on h, with X-Content-Type-Options: nosniff, which every
// answer a browser renders takes: the type it is given is the type it uses.
func SetSecurityHeaders(h http.Header, b Browser) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", b.CSP)
	h.Set("Cache-Control", b.Cache)
	if b.Page {
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
	}
}
