package devstack

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// Browser is a web browser for the api's connect page, as an admin's: it keeps cookies, sends
// the headers a browser sends with a form, and follows redirects, through the fake Graph API's
// dialog, back to the api's callback.
type Browser struct {
	client *http.Client
	// Callback is the last callback URL the browser was sent to (Meta's code and state in it).
	Callback string
	// StopAtCallback leaves the callback unopened: the browser ends on the dialog's redirect.
	StopAtCallback bool
}

// NewBrowser returns a browser with no cookies.
func NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	b := &Browser{}
	b.client = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return fmt.Errorf("stopped after 10 redirects")
		}
		if strings.HasSuffix(req.URL.Path, "/callback") {
			b.Callback = req.URL.String()
			if b.StopAtCallback {
				return http.ErrUseLastResponse
			}
		}
		return nil
	}}
	return b
}

// Get opens u and returns the status and page it ends on.
func (b *Browser) Get(u string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Sec-Fetch-Site", "none")
	return b.do(req)
}

var (
	formAction  = regexp.MustCompile(`<form method="post" action="([^"]*)">`)
	hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)
)

// Press submits the form of page, which the browser got from pageURL, as a click on its button
// does: a same-origin POST of its hidden fields.
func (b *Browser) Press(pageURL, page string) (int, string, error) {
	m := formAction.FindStringSubmatch(page)
	if m == nil {
		return 0, "", fmt.Errorf("no form on the page")
	}
	base, err := url.Parse(pageURL)
	if err != nil {
		return 0, "", err
	}
	action, err := base.Parse(html.UnescapeString(m[1]))
	if err != nil {
		return 0, "", err
	}
	form := url.Values{}
	for _, in := range hiddenInput.FindAllStringSubmatch(page, -1) {
		form.Set(html.UnescapeString(in[1]), html.UnescapeString(in[2]))
	}
	req, err := http.NewRequest(http.MethodPost, action.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base.Scheme+"://"+base.Host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

// Connect opens a connect link, presses its button and returns the page the callback answers
// (or the page that stopped the way).
func (b *Browser) Connect(link string) (int, string, error) {
	status, page, err := b.Get(link)
	if err != nil || status != http.StatusOK {
		return status, page, err
	}
	return b.Press(link, page)
}

func (b *Browser) do(req *http.Request) (int, string, error) {
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), err
}
