package graph

import (
	"fmt"
	"strings"

	"github.com/wapipe/wapipe/internal/contact"
)

// Who a message goes to (shared/meta/usernames.md, "Sending"): Meta now reaches a user by phone
// number ("to") or by business-scoped user id ("recipient"), because a user with a username may
// no longer share the phone. Meta sends to "to" when both are given.

// The refusals of Send about who a message goes to. Each wraps ErrInvalidMessage, so Classify
// reports it Permanent (the same message would be refused again) and errors.Is(err,
// ErrInvalidMessage) holds. They never quote the number or id, which are personal data.
var (
	// ErrNoAddress: the message has neither To nor Recipient. Meta refuses a send with an empty
	// "to", and nothing may be keyed by an empty identifier.
	ErrNoAddress = fmt.Errorf("%w: to or recipient is required", ErrInvalidMessage)
	// ErrToNotPhone: To holds something other than a phone number, typically a BSUID, which
	// goes in Recipient: Meta would refuse it, or read it as some other number.
	ErrToNotPhone = fmt.Errorf("%w: to must be a phone number (a business-scoped user id goes in recipient)", ErrInvalidMessage)
	// ErrRecipientNotUserID: Recipient holds a phone number, which goes in To. Anything else is
	// sent as received: webhook identifiers are taken as Meta gives them (only /v1 checks the
	// forms of shared/meta/usernames.md), and Meta may still change those forms.
	ErrRecipientNotUserID = fmt.Errorf("%w: recipient must be a business-scoped user id (a phone number goes in to)", ErrInvalidMessage)
)

// checkAddress returns why m cannot go to anyone as addressed, or nil.
func checkAddress(m Message) error {
	switch {
	case m.To == "" && m.Recipient == "":
		return ErrNoAddress
	case m.To != "" && !isPhone(m.To):
		return ErrToNotPhone
	case m.Recipient != "" && isPhone(m.Recipient):
		return ErrRecipientNotUserID
	}
	return nil
}

// phoneSeparators are what people write between a phone number's digits. Meta takes a number
// written "+1 (650) 555-1234" as well as "16505551234", and businesses send such numbers, so
// they are not refused; a BSUID keeps its country letters however these are removed.
var phoneSeparators = strings.NewReplacer(" ", "", "-", "", "(", "", ")", "", ".", "")

// isPhone reports whether s is a phone number, as written with or without separators.
func isPhone(s string) bool { return contact.IsPhone(phoneSeparators.Replace(s)) }

// CategoryAuthentication is the category Meta gives authentication templates, as the template
// listing reports it (MessageTemplate.Category).
const CategoryAuthentication = "AUTHENTICATION"

// RequiresPhone reports whether m can go only to a phone number (To), never by Recipient alone:
// it is an authentication template with a one-tap, zero-tap or copy-code button, which Meta
// refuses by BSUID with error 131062 (permanent). category is the template's category as the
// account's template listing gives it (MessageTemplate.Category; any case), "" when unknown.
//
// The category decides, not the send body, because the body does not show it. Meta sends an
// authentication template the same way whichever its OTP button (copy code, one-tap or
// zero-tap): a "body" component whose text parameter is the code and a "button" component
// with sub_type "url", index "0" and the code again as its text parameter (the button is
// created with type OTP, but Meta keeps and sends it as a URL button). That is also the body of
// any utility or marketing template with a dynamic URL button, and "copy_code" as a send's
// sub_type is the marketing coupon-code button (a coupon_code parameter), which goes by BSUID.
// Since April 2024 Meta sends no authentication template without an OTP button, so every
// authentication template send needs the phone.
//
// With the category unknown, RequiresPhone says false rather than guess from the body's shape:
// a wrong false costs one call that Meta refuses with 131062, the same permanent outcome as a
// local refusal, while a wrong true would refuse a utility template Meta would have delivered.
func RequiresPhone(m Message, category string) bool {
	return m.Type == "template" && m.Template != nil && strings.EqualFold(category, CategoryAuthentication)
}
