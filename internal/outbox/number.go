package outbox

import (
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/tenant"
)

// SenderNumber is the tenant's number a request names, or its only number when it names none;
// a refusal (invalid_request) when it names none and the tenant has several, or names one that
// is not the tenant's.
func SenderNumber(t *tenant.Tenant, requested string) (string, error) {
	switch {
	case requested == "" && len(t.PhoneNumbers) == 1:
		return t.PhoneNumbers[0].PhoneNumberID, nil
	case requested == "":
		return "", refusal.New(refusal.InvalidRequest, "phone_number_id: required, the tenant has several numbers")
	case !t.OwnsNumber(requested):
		return "", refusal.New(refusal.InvalidRequest, "phone_number_id: not one of the tenant's numbers")
	}
	return requested, nil
}
