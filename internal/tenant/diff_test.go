package tenant

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func lines(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

func TestDiffCreate(t *testing.T) {
	t.Parallel()
	want := []string{
		"+ tenant: acme-bus",
		"+ name: Acme Bus",
		"+ language: id",
		"+ audience: members",
		"+ phone_numbers: 106540352242922",
		"+ members: Pak Agus (…7890)",
		"+ sending.per_second: 20",
		"+ sending.max_concurrent: 2",
		"+ limits.conversation.max: 5",
		"+ limits.conversation.per: 30s",
		"+ limits.sender.max: 20",
		"+ limits.sender.per: 5m",
		"+ quota.llm_calls_per_month: 1000",
		"+ alerts: [owner, admin]",
		"+ assistant.mode: llm",
		"+ assistant.ack_text: Thanks, we got your message.",
		"+ assistant.model: gemini-2.5-flash",
		"+ assistant.instructions: (58 characters)",
		"+ assistant.min_confidence: 0.7",
		"+ assistant.action_url: https://ops.example.com/wapipe/actions",
		"+ assistant.intents: create_booking",
		"+ assistant.intents: check_schedule",
		"+ templates.reengage: resume_conversation (id)",
	}
	if diff := cmp.Diff(want, lines(Diff(nil, contractTenant()))); diff != "" {
		t.Errorf("Diff(nil, contract) (-want, +got):\n%s", diff)
	}
	// A minimal tenant: defaults are shown, unset values are not.
	minimal := mustParseFile(t, "testdata/minimal.yaml")
	want = []string{
		"+ tenant: acme-bus",
		"+ name: Acme Bus",
		"+ language: id",
		"+ audience: members",
		"+ phone_numbers: 106540352242922",
		"+ sending.per_second: 20",
		"+ sending.max_concurrent: 2",
		"+ limits.conversation.max: 5",
		"+ limits.conversation.per: 30s",
		"+ limits.sender.max: 20",
		"+ limits.sender.per: 5m",
		"+ quota.llm_calls_per_month: unlimited",
		"+ alerts: [owner, admin]",
		"+ assistant.mode: ack",
		"+ assistant.model: gemini-2.5-flash",
		"+ assistant.min_confidence: 0.7",
	}
	if diff := cmp.Diff(want, lines(Diff(nil, minimal))); diff != "" {
		t.Errorf("Diff(nil, minimal) (-want, +got):\n%s", diff)
	}
}

func TestDiffNoChange(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"testdata/contract.yaml", "testdata/minimal.yaml", "testdata/ack.yaml", "../../tenants/sample.yaml"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			// Applying the same file twice, defaults included.
			a, b := mustParseFile(t, f), mustParseFile(t, f)
			if d := Diff(a, b); len(d) != 0 {
				t.Errorf("same file: %q", lines(d))
			}
			// Written back as YAML (show, or a stored tenant exported) and read again.
			data, err := Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse(Marshal):\n%v\n%s", err, data)
			}
			if d := Diff(a, c); len(d) != 0 {
				t.Errorf("after a round trip: %q\n%s", lines(d), data)
			}
			if diff := cmp.Diff(a, c); diff != "" {
				t.Errorf("round trip (-want, +got):\n%s", diff)
			}
			// A stored tenant may come back with nil instead of empty lists.
			b.Members, b.Assistant.Intents = nil, nil
			a.Members, a.Assistant.Intents = []Member{}, []Intent{}
			if d := Diff(a, b); len(d) != 0 {
				t.Errorf("nil vs empty lists: %q", lines(d))
			}
		})
	}
}

func TestDiffEachKindOfChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Tenant)
		want   []string
	}{
		{"scalar", func(t *Tenant) { t.Language = "fr" }, []string{"~ language: id -> fr"}},
		{"number", func(t *Tenant) { t.Sending.PerSecond = 7.5 }, []string{"~ sending.per_second: 20 -> 7.5"}},
		{"duration", func(t *Tenant) { t.Limits.Sender.Per = time.Hour }, []string{"~ limits.sender.per: 5m -> 1h"}},
		{"odd duration", func(t *Tenant) { t.Limits.Conversation.Per = 90 * time.Minute }, []string{"~ limits.conversation.per: 30s -> 1h30m"}},
		{"quota removed", func(t *Tenant) { t.Quota.LLMCallsPerMonth = nil }, []string{"~ quota.llm_calls_per_month: 1000 -> unlimited"}},
		{"quota zero", func(t *Tenant) { t.Quota.LLMCallsPerMonth = ptr(0) }, []string{"~ quota.llm_calls_per_month: 1000 -> 0 (no LLM calls)"}},
		{"per-sender share set", func(t *Tenant) { t.Quota.PerSenderPerMonth = ptr(5) }, []string{
			"~ quota.per_sender_per_month: default (100) -> 5"}},
		{"text set", func(t *Tenant) { t.Assistant.AckText = "" }, []string{"- assistant.ack_text: Thanks, we got your message."}},
		{"long text", func(t *Tenant) { t.Assistant.Instructions = "Be brief.\nBe kind.\n" }, []string{
			"~ assistant.instructions: changed (58 -> 19 characters)"}},
		{"long text of the same length", func(t *Tenant) {
			t.Assistant.Instructions = strings.Replace(t.Assistant.Instructions, "tour-bus", "tour-car", 1)
		}, []string{"~ assistant.instructions: changed (58 -> 58 characters)"}},
		{"number added", func(t *Tenant) {
			t.PhoneNumbers = append(t.PhoneNumbers, PhoneNumber{PhoneNumberID: "106540352242923", WABAID: "102290129340398"})
		}, []string{"+ phone_numbers: 106540352242923"}},
		{"number removed", func(t *Tenant) {
			t.PhoneNumbers = []PhoneNumber{{PhoneNumberID: "106540352242923", WABAID: "102290129340398"}}
		}, []string{"+ phone_numbers: 106540352242923", "- phone_numbers: 106540352242922"}},
		{"number changed", func(t *Tenant) { t.PhoneNumbers[0].WABAID = "1" }, []string{
			"~ phone_numbers[106540352242922].waba_id: 102290129340398 -> 1"}},
		{"number shared", func(t *Tenant) { t.PhoneNumbers[0].Shared = true }, []string{
			"~ phone_numbers[106540352242922].shared: false -> true"}},
		{"numbers reordered", func(t *Tenant) {
			t.PhoneNumbers = append([]PhoneNumber{{PhoneNumberID: "106540352242923", WABAID: "1"}}, t.PhoneNumbers...)
		}, []string{"+ phone_numbers: 106540352242923"}}, // a new first number is not a reorder
		{"member added", func(t *Tenant) {
			t.Members = append(t.Members, Member{WaID: "6281298765432", Role: RoleMember})
		}, []string{"+ members: …5432"}},
		{"member removed", func(t *Tenant) { t.Members = nil }, []string{"- members: Pak Agus (…7890)"}},
		{"member role", func(t *Tenant) { t.Members[0].Role = RoleAdmin }, []string{
			"~ members[Pak Agus (…7890)].role: owner -> admin"}},
		{"member language unset", func(t *Tenant) { t.Members[0].Language = "" }, []string{
			"- members[Pak Agus (…7890)].language: id"}},
		{"member renamed", func(t *Tenant) { t.Members[0].Name = "Agus" }, []string{
			"~ members[Agus (…7890)].name: Pak Agus -> Agus"}},
		{"intent added", func(t *Tenant) {
			t.Assistant.Intents = append(t.Assistant.Intents, Intent{Name: "cancel_booking", Description: "d"})
		}, []string{"+ assistant.intents: cancel_booking"}},
		{"intent removed", func(t *Tenant) { t.Assistant.Intents = t.Assistant.Intents[:1] }, []string{
			"- assistant.intents: check_schedule"}},
		{"intent fields", func(t *Tenant) {
			in := &t.Assistant.Intents[1]
			in.Fields = append(in.Fields, Field{Name: "bus", Type: FieldString})
		}, []string{"~ assistant.intents[check_schedule].fields: {date: date} -> {date: date, bus: string}"}},
		{"intent field order", func(t *Tenant) {
			f := t.Assistant.Intents[0].Fields
			f[0], f[1] = f[1], f[0]
		}, []string{"~ assistant.intents[create_booking].fields: {client: string, date: date, route: string, bus: string, price: integer} -> {date: date, client: string, route: string, bus: string, price: integer}"}},
		{"intent roles and confirm", func(t *Tenant) {
			in := &t.Assistant.Intents[0]
			in.Roles, in.Confirm = nil, false
		}, []string{
			"~ assistant.intents[create_booking].confirm: true -> false",
			"~ assistant.intents[create_booking].roles: [owner, admin] -> []",
		}},
		{"intent notify roles", func(t *Tenant) { t.Assistant.Intents[0].Notify = []Role{RoleAdmin} }, []string{
			"~ assistant.intents[create_booking].notify: [] -> [admin]"}},
		{"notify template added", func(t *Tenant) { t.Templates.Notify = &Template{Name: "new_request", Language: "id"} }, []string{
			"+ templates.notify: new_request (id)"}},
		{"intents reordered", func(t *Tenant) {
			in := t.Assistant.Intents
			in[0], in[1] = in[1], in[0]
		}, []string{"~ assistant.intents: order create_booking, check_schedule -> check_schedule, create_booking"}},
		{"template removed", func(t *Tenant) { t.Templates.Reengage = nil }, []string{
			"- templates.reengage: resume_conversation (id)"}},
		{"template changed", func(t *Tenant) { t.Templates.Reengage.Language = "en_US" }, []string{
			"~ templates.reengage: resume_conversation (id) -> resume_conversation (en_US)"}},
		{"several, in file order", func(t *Tenant) {
			t.Templates.Reengage = nil
			t.Name = "Acme Bus Lines"
			t.Assistant.Mode = ModeAck
		}, []string{
			"~ name: Acme Bus -> Acme Bus Lines",
			"~ assistant.mode: llm -> ack",
			"- templates.reengage: resume_conversation (id)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prev, next := contractTenant(), contractTenant()
			tt.change(next)
			if diff := cmp.Diff(tt.want, lines(Diff(prev, next))); diff != "" {
				t.Errorf("Diff (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestDiffMembersReorderedHidesNumbers(t *testing.T) {
	t.Parallel()
	prev := contractTenant()
	prev.Members = append(prev.Members, Member{WaID: "6281298765432", Role: RoleMember, Name: "Made"})
	next := contractTenant()
	next.Members = []Member{prev.Members[1], prev.Members[0]}
	want := []string{"~ members: order changed"}
	if diff := cmp.Diff(want, lines(Diff(prev, next))); diff != "" {
		t.Errorf("Diff (-want, +got):\n%s", diff)
	}
}

// TestDiffSeesEveryField changes each leaf of a full tenant in turn: Diff must report each,
// so a field added to the model cannot be forgotten by Diff.
func TestDiffSeesEveryField(t *testing.T) {
	t.Parallel()
	var paths []string
	seen := map[string]bool{}
	leaf := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	var visit func(v reflect.Value, path string)
	visit = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				visit(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case reflect.Pointer:
			if !v.IsNil() {
				visit(v.Elem(), path)
			}
		case reflect.Slice:
			for i := range v.Len() {
				visit(v.Index(i), path+"[]")
			}
			if v.Type().Elem().Kind() != reflect.Struct {
				leaf(path) // a list of values: appending is a change too
			}
		default:
			leaf(path)
		}
	}
	visit(reflect.ValueOf(contractTenant()).Elem(), "")

	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			next := contractTenant()
			if !mutate(reflect.ValueOf(next).Elem(), strings.Split(strings.TrimPrefix(p, "."), "."), p) {
				t.Fatalf("could not change %s", p)
			}
			if reflect.DeepEqual(contractTenant(), next) {
				t.Fatalf("mutation of %s changed nothing", p)
			}
			if d := Diff(contractTenant(), next); len(d) == 0 {
				t.Errorf("Diff does not see a change of %s", p)
			}
		})
	}
}

// mutate changes the first leaf on path (field names, "[]" meaning element 0).
func mutate(v reflect.Value, path []string, full string) bool {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if len(path) == 0 {
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Float64:
			v.SetFloat(v.Float() + 0.125)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
		case reflect.Map:
			m := reflect.MakeMap(v.Type())
			for _, k := range v.MapKeys() {
				m.SetMapIndex(k, v.MapIndex(k))
			}
			m.SetMapIndex(reflect.ValueOf("xx").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
			v.Set(m)
		default:
			return false
		}
		return true
	}
	name, elem := strings.CutSuffix(path[0], "[]")
	f := v.FieldByName(name)
	if elem {
		if len(path) == 1 && f.Type().Elem().Kind() != reflect.Struct {
			return mutate(f.Index(0), nil, full)
		}
		if len(path) == 1 {
			return false
		}
		return mutate(f.Index(0), path[1:], full)
	}
	return mutate(f, path[1:], full)
}

func TestDiffNeverShowsAMemberNumber(t *testing.T) {
	t.Parallel()
	prev := mustParseFile(t, "../../tenants/sample.yaml")
	next := mustParseFile(t, "../../tenants/sample.yaml")
	next.Members[0].Role = RoleAdmin
	next.Members[1].WaID = "6281200000000"
	next.Members = append(next.Members, Member{WaID: "4915112345678", Role: RoleMember})
	var all []string
	all = append(all, lines(Diff(prev, next))...)
	all = append(all, lines(Diff(nil, next))...)
	all = append(all, lines(Diff(next, prev))...)
	out := strings.Join(all, "\n")
	for _, m := range append(prev.Members, next.Members...) {
		for _, id := range []string{m.WaID, m.UserID} {
			if id != "" && strings.Contains(out, id) {
				t.Errorf("diff shows %s:\n%s", id, out)
			}
		}
	}
}

func TestMemberLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m    Member
		want string
	}{
		{Member{WaID: "6281234567890", Name: "Pak Agus"}, "Pak Agus (…7890)"},
		{Member{WaID: "6281234567890"}, "…7890"},
		{Member{WaID: "1234", Name: "Short"}, "Short (…)"},
	}
	for _, tt := range tests {
		if got := MemberLabel(tt.m); got != tt.want {
			t.Errorf("MemberLabel(%+v) = %q, want %q", tt.m, got, tt.want)
		}
	}
}
