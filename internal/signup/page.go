package signup

import (
	"bytes"
	"html/template"
	"net/http"

	"github.com/wapipe/wapipe/internal/httpserver"
)

// pageData is an Embedded Signup page: a title, a message, optional items (the tenant's numbers)
// and notes, and the connect button's form.
type pageData struct {
	Title, Message string
	Items, Notes   []string
	Form           *pageForm
}

// pageForm is the connect page's button: a plain HTML form, so it works without JavaScript.
type pageForm struct {
	Action, Button string
	// Link is the link's state; CSRF the browser's connect cookie, repeated (double submit).
	Link, CSRF string
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}}</title></head>
<body style="font-family:sans-serif;max-width:36em;margin:3em auto;padding:0 1em"><h1>{{.Title}}</h1><p>{{.Message}}</p>
{{- if .Items}}
<ul>{{range .Items}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
{{- range .Notes}}
<p>{{.}}</p>
{{- end}}
{{- with .Form}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="link" value="{{.Link}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" style="font-size:1.1em;padding:.5em 1em">{{.Button}}</button>
</form>
{{- end}}
</body></html>
`))

// page answers a plain HTML page for a person in a browser, with status (the page says what
// happened; the status only tells a machine whether it worked).
func page(w http.ResponseWriter, status int, title, message string) {
	render(w, status, pageData{Title: title, Message: message})
}

// pageHeaders protect the pages (httpserver.SetSecurityHeaders): they carry a connect link's
// state and are about one business, so they are never cached, never framed (the button must not
// be clickjacked) and send no referrer to Meta; they load nothing but their inline style.
var pageHeaders = httpserver.Browser{
	CSP:   "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
	Cache: "no-store", Page: true,
}

// render answers d as HTML, with pageHeaders.
func render(w http.ResponseWriter, status int, d pageData) {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, d); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString("internal error\n")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	httpserver.SetSecurityHeaders(w.Header(), pageHeaders)
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
