package tenant

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckNumbersShared: a number may be listed by several tenants only when every one says
// shared: true with the same waba_id; each refusal is one line naming the other tenant.
func TestCheckNumbersShared(t *testing.T) {
	t.Parallel()
	const number, waba = "106540352242922", "102290129340398"
	tests := []struct {
		name   string
		shared bool
		waba   string
		use    *NumberUse
		want   []string
	}{
		{"a new number", false, waba, nil, nil},
		{"a new shared number", true, waba, nil, nil},
		{"its own number", false, waba, &NumberUse{TenantIDs: []string{"acme-bus"}, WABAID: waba}, nil},
		{"sharing its own number", true, waba, &NumberUse{TenantIDs: []string{"acme-bus"}, WABAID: waba}, nil},
		{"un-sharing a number it alone shares", false, waba, &NumberUse{TenantIDs: []string{"acme-bus"}, Shared: true, WABAID: waba}, nil},
		{"joining a shared number", true, waba, &NumberUse{TenantIDs: []string{"sunrise-bus"}, Shared: true, WABAID: waba}, nil},
		{"staying on a shared number", true, waba, &NumberUse{TenantIDs: []string{"acme-bus", "sunrise-bus"}, Shared: true, WABAID: waba}, nil},
		{"another tenant's number", false, waba, &NumberUse{TenantIDs: []string{"sunrise-bus"}, WABAID: waba}, []string{
			"phone_numbers[0].phone_number_id: 106540352242922 already belongs to tenant sunrise-bus"}},
		{"shared here, not by its owner", true, waba, &NumberUse{TenantIDs: []string{"sunrise-bus"}, WABAID: waba}, []string{
			"phone_numbers[0].shared: 106540352242922 already belongs to tenant sunrise-bus, which does not list it shared: true"}},
		{"shared there, not here", false, waba, &NumberUse{TenantIDs: []string{"blue-bus", "sunrise-bus"}, Shared: true, WABAID: waba}, []string{
			"phone_numbers[0].shared: 106540352242922 is shared with tenant blue-bus, sunrise-bus: list it with shared: true"}},
		{"un-sharing a number others share", false, waba, &NumberUse{TenantIDs: []string{"acme-bus", "sunrise-bus"}, Shared: true, WABAID: waba}, []string{
			"phone_numbers[0].shared: 106540352242922 is shared with tenant sunrise-bus: list it with shared: true"}},
		{"another waba_id", true, "999", &NumberUse{TenantIDs: []string{"sunrise-bus"}, Shared: true, WABAID: waba}, []string{
			"phone_numbers[0].waba_id: 106540352242922 is shared with tenant sunrise-bus under waba_id 102290129340398: every tenant must give the same waba_id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tn := &Tenant{ID: "acme-bus", PhoneNumbers: []PhoneNumber{{PhoneNumberID: number, WABAID: tc.waba, Shared: tc.shared}}}
			uses := map[string]NumberUse{}
			if tc.use != nil {
				uses[number] = *tc.use
			}
			var got []string
			if err := CheckNumbers(tn, uses); err != nil {
				for _, p := range err.(Problems) {
					got = append(got, p.String())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestParseSharedNumber: shared: true sits in the phone number entry.
func TestParseSharedNumber(t *testing.T) {
	t.Parallel()
	tn, err := Parse([]byte(`id: acme-bus
name: Acme Bus
language: id
audience: members
phone_numbers:
  - {phone_number_id: "106540352242922", waba_id: "102290129340398", shared: true}
  - {phone_number_id: "106540352242923", waba_id: "102290129340398"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !tn.SharesNumber("106540352242922") || tn.SharesNumber("106540352242923") || tn.SharesNumber("1") {
		t.Errorf("SharesNumber wrong for %+v", tn.PhoneNumbers)
	}
}
