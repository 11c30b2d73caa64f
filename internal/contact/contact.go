// Package contact is who wapipe talks to on WhatsApp: one person for one tenant, known by the
// identifiers Meta gives (CONTRACT.md, Wave 4, and shared/meta/usernames.md):
//
//   - a phone number (wa_id), which Meta now sends only when this business exchanged a message
//     with it recently, or the user has no username;
//   - a business-scoped user id (BSUID, user_id), present in every messages webhook since April
//     2026, "CC.…" (CC the user's country), regenerated when the user changes number;
//   - a parent BSUID ("CC.ENT.…"), shared by the portfolios of a business Meta enrolled;
//   - a username and a profile name, for display only, never a key.
//
// Identity is what a message, a status or a send names; the store keeps one contact per tenant
// with a stable id (ct_…) whose aliases are the phone and the BSUIDs, so either finds it.
// Address says how a message reaches a contact: the phone when known, else the BSUID.
package contact

import (
	"regexp"
	"strings"
)

// Identity is the identifiers of one person as a payload, a send or a file names them. Each is
// optional; at least one of WaID, UserID and ParentUserID makes it a person (IsZero).
type Identity struct {
	// WaID is the phone number, digits only as Meta sends it.
	WaID string `json:"wa_id,omitempty" firestore:"wa_id,omitempty"`
	// UserID is the business-scoped user id (BSUID), exactly as received: case-sensitive.
	UserID string `json:"user_id,omitempty" firestore:"user_id,omitempty"`
	// ParentUserID is the parent BSUID of an enrolled business.
	ParentUserID string `json:"parent_user_id,omitempty" firestore:"parent_user_id,omitempty"`
	// Username is the WhatsApp username (display only), without its "@".
	Username string `json:"username,omitempty" firestore:"username,omitempty"`
	// Name is the WhatsApp profile name (display only).
	Name string `json:"name,omitempty" firestore:"name,omitempty"`
}

// IsZero reports whether the identity names nobody: no phone and no BSUID. Nothing is ever keyed
// by an empty identifier, which would make every such person one.
func (i Identity) IsZero() bool { return i.WaID == "" && i.UserID == "" && i.ParentUserID == "" }

// Kind names an identifier that finds a contact.
type Kind string

// The identifiers that find a contact. Username and name never do.
const (
	KindPhone  Kind = "wa_id"
	KindUser   Kind = "user_id"
	KindParent Kind = "parent_user_id"
)

// Key is one identifier of a person.
type Key struct {
	Kind  Kind
	Value string
}

// Keys are the identifiers of i that find a contact, phone first; none for an empty field.
func (i Identity) Keys() []Key {
	var out []Key
	for _, k := range []Key{{KindPhone, i.WaID}, {KindUser, i.UserID}, {KindParent, i.ParentUserID}} {
		if k.Value != "" {
			out = append(out, k)
		}
	}
	return out
}

// FromWebhook is the identity a webhook names, accepted as received with one exception: a
// phone field that holds no phone number (some senders put the BSUID in from and wa_id) is not
// a phone, so that it never goes out in a send's "to"; it is the BSUID when none came.
func FromWebhook(waID, userID, parentUserID, username, name string) Identity {
	i := Identity{
		WaID: strings.TrimSpace(waID), UserID: strings.TrimSpace(userID), ParentUserID: strings.TrimSpace(parentUserID),
		Username: strings.TrimPrefix(strings.TrimSpace(username), "@"), Name: strings.TrimSpace(name),
	}
	if i.WaID != "" && !IsPhone(i.WaID) {
		if i.UserID == "" {
			i.UserID = i.WaID
		}
		i.WaID = ""
	}
	i.WaID = strings.TrimPrefix(i.WaID, "+")
	if i.ParentUserID == i.UserID {
		i.ParentUserID = ""
	}
	return i
}

// Merge returns i with the identifiers and display fields other adds: other's non-empty fields
// win, as they are newer.
func (i Identity) Merge(other Identity) Identity {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&i.WaID, other.WaID)
	set(&i.UserID, other.UserID)
	set(&i.ParentUserID, other.ParentUserID)
	set(&i.Username, other.Username)
	set(&i.Name, other.Name)
	return i
}

// Matches reports whether i and other share an identifier.
func (i Identity) Matches(other Identity) bool {
	for _, a := range i.Keys() {
		for _, b := range other.Keys() {
			if a == b {
				return true
			}
		}
	}
	return false
}

// Address is where a message to a person goes: To (a phone number) or Recipient (a BSUID or a
// parent BSUID). Exactly one is set for a person, none for nobody. A BSUID never goes in To.
type Address struct {
	To        string `json:"to,omitempty"`
	Recipient string `json:"recipient,omitempty"`
}

// IsZero reports whether the address reaches nobody.
func (a Address) IsZero() bool { return a.To == "" && a.Recipient == "" }

// Address is how to reach i: the phone when it is known (Meta recommends it: only exchanges with
// the phone keep it coming in webhooks), else the parent BSUID when one arrived (a business Meta
// enrolled), else the BSUID.
func (i Identity) Address() Address {
	switch {
	case i.WaID != "":
		return Address{To: i.WaID}
	case i.ParentUserID != "":
		return Address{Recipient: i.ParentUserID}
	default:
		return Address{Recipient: i.UserID}
	}
}

var (
	userIDPattern       = regexp.MustCompile(`^[A-Z]{2}\.[A-Za-z0-9]{1,128}$`)
	parentUserIDPattern = regexp.MustCompile(`^[A-Z]{2}\.ENT\.[A-Za-z0-9]{1,128}$`)
	phonePattern        = regexp.MustCompile(`^\+?[0-9]{1,20}$`)
)

// ValidUserID reports whether s has the form of a BSUID: CC. and 1 to 128 letters or digits.
func ValidUserID(s string) bool { return userIDPattern.MatchString(s) }

// ValidParentUserID reports whether s has the form of a parent BSUID: CC.ENT. and 1 to 128
// letters or digits.
func ValidParentUserID(s string) bool { return parentUserIDPattern.MatchString(s) }

// IsPhone reports whether s is a phone number as webhooks carry it: digits, perhaps after a "+".
func IsPhone(s string) bool { return phonePattern.MatchString(s) }

// Country is the ISO country code a BSUID or parent BSUID starts with ("US" of
// "US.1349…"); "" for anything else.
func Country(userID string) string {
	if ValidUserID(userID) || ValidParentUserID(userID) {
		return userID[:2]
	}
	return ""
}

// Display is how a person is shown to people (a notification names its sender, the console its
// contacts): the profile name, else "@username", else the phone's last four digits, else "".
func (i Identity) Display() string {
	switch {
	case i.Name != "":
		return i.Name
	case i.Username != "":
		return "@" + i.Username
	case len(i.WaID) >= 4:
		return "…" + i.WaID[len(i.WaID)-4:]
	}
	return ""
}
