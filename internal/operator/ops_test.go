package operator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestRedactionIsAnAllowList (issue 11, item 9): a task or dead-letter body shows only
// allow-listed fields. A contact card's address, birthday and company, a Flows response_json,
// text, captions, names and a location's coordinates are never shown; phone numbers and wamids
// appear as their keyed refs; types, times, media metadata, reply ids and error codes stay.
func TestRedactionIsAnAllowList(t *testing.T) {
	t.Parallel()
	h := logging.DevHasher()
	const (
		phone = "447700900123"
		wamid = "wamid.HBgMNDQ3NzAwOTAwMTIzFQIAEhgUM0VCMEM3NjdENzE5NDYxOUVGNEEA"
	)
	o := whatsapp.SampleOptions{From: phone, ContactName: "Ada Lovelace", MessageID: wamid}
	envelope := func(message string) []byte {
		return []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Ada Lovelace"},"wa_id":"` + phone + `"}],"messages":[` + message + `]}}]}]}`)
	}
	contactCard := envelope(`{"from":"` + phone + `","id":"` + wamid + `","timestamp":"1700000000","type":"contacts","contacts":[{
		"addresses":[{"street":"1 Secret Street","city":"Marlow","zip":"SL7 1AA","country":"United Kingdom","country_code":"GB","type":"HOME"}],
		"birthday":"1815-12-10","emails":[{"email":"ada@example.com","type":"WORK"}],
		"name":{"formatted_name":"Charles Babbage","first_name":"Charles","last_name":"Babbage"},
		"org":{"company":"Analytical Engines Ltd","department":"Engines","title":"Inventor"},
		"phones":[{"phone":"+44 7700 900456","wa_id":"447700900456","type":"CELL"}],
		"urls":[{"url":"https://example.com/babbage","type":"WORK"}]}]}`)
	flowsReply := envelope(`{"from":"` + phone + `","id":"` + wamid + `","timestamp":"1700000000","type":"interactive","context":{"from":"15550783881","id":"wamid.context"},
		"interactive":{"type":"nfm_reply","nfm_reply":{"name":"flow","body":"Sent","response_json":"{\"flow_token\":\"t\",\"date_of_birth\":\"1990-01-01\",\"diagnosis\":\"asthma\"}"}}}`)
	listReply := whatsapp.SampleListReply(o, "slot-friday-7pm", "Friday 7pm", "Table for two")
	image := whatsapp.SampleImage(o, "1234567890", "image/jpeg", "my passport")
	location := whatsapp.SampleLocation(o, 51.5, -0.12, "Home", "1 Secret Street")
	text := whatsapp.SampleText(o, "my card number is 4242")
	failed := whatsapp.SampleFailedStatus(o, 131026, "Message undeliverable", "recipient "+phone)
	outbound, _ := json.Marshal(tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), wamid), InboundEventID: wamid, PhoneNumberID: "106540352242922",
		To: phone, Message: whatsapp.Message{ID: wamid, From: phone, ContactName: "Ada Lovelace", Type: "text", Text: "my card number is 4242",
			Reply: &whatsapp.Reply{Kind: "list_reply", ID: "slot-friday-7pm", Title: "Friday 7pm"}}})

	never := []string{phone, "447700900456", "7700 900456", wamid, "Ada Lovelace", "Charles", "Babbage", "1 Secret Street", "Marlow",
		"SL7 1AA", "1815-12-10", "ada@example.com", "Analytical Engines", "Engines", "Inventor", "example.com/babbage",
		"response_json\":\"{", "date_of_birth", "asthma", "Friday 7pm", "Table for two", "my passport", "4242", "51.5", "-0.12", "Home", "recipient "}
	tests := []struct {
		name string
		body []byte
		kept []string
	}{
		{"contact card", contactCard, []string{`"type":"contacts"`, `"type":"HOME"`, `"timestamp":"1700000000"`, `"from":"` + h.Phone(phone) + `"`,
			`"id":"` + h.Ref(wamid) + `"`, `"wa_id":"` + h.Phone("447700900456") + `"`, `"phone_number_id":"106540352242922"`}},
		{"flows reply", flowsReply, []string{`"type":"nfm_reply"`, `"response_json":"[redacted]"`, `"id":"` + h.Ref("wamid.context") + `"`}},
		{"list reply", listReply, []string{`"id":"slot-friday-7pm"`, `"type":"list_reply"`}},
		{"image", image, []string{`"mime_type":"image/jpeg"`, `"id":"1234567890"`, `"caption":"[redacted]"`}},
		{"location", location, []string{`"type":"location"`, `"latitude":"[redacted]"`}},
		{"text", text, []string{`"messaging_product":"whatsapp"`, `"body":"[redacted]"`}},
		{"failed status", failed, []string{`"code":131026`, `"title":"Message undeliverable"`, `"recipient_id":"` + h.Phone(phone) + `"`, `"status":"failed"`}},
		{"outbound task", outbound, []string{`"idempotency_key":"` + tasks.IdempotencyKey(keyedid.Dev(), wamid) + `"`, `"inbound_event_id":"` + h.Ref(wamid) + `"`,
			`"to":"` + h.Phone(phone) + `"`, `"kind":"list_reply"`, `"title":"[redacted]"`, `"text":"[redacted]"`}},
	}
	for _, tc := range tests {
		b, err := json.Marshal(RedactJSON(h, tc.body))
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		for _, private := range never {
			if strings.Contains(got, private) {
				t.Errorf("%s: redacted document holds %q: %s", tc.name, private, got)
			}
		}
		for _, kept := range tc.kept {
			if !strings.Contains(got, kept) {
				t.Errorf("%s: redacted document lost %s: %s", tc.name, kept, got)
			}
		}
	}
	if got := RedactJSON(h, []byte("not json 447700900123")); got != Redacted+" (not JSON)" {
		t.Errorf("RedactJSON(non-JSON) = %v", got)
	}
	if got, _ := json.Marshal(RedactJSON(nil, text)); strings.Contains(string(got), phone) || strings.Contains(string(got), "ph_") {
		t.Errorf("without a Hasher phone numbers must be redacted: %s", got)
	}
}

func TestTaskFromMasksCredentials(t *testing.T) {
	t.Parallel()
	task := TaskFrom(logging.DevHasher(), taskqueue.TaskInfoFrom(&cloudtaskspb.Task{
		Name: "projects/p/locations/l/queues/wa-outbound/tasks/abc-out",
		View: cloudtaskspb.Task_FULL,
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
			Url: "http://w/internal/process_outbound", HttpMethod: cloudtaskspb.HttpMethod_POST,
			Headers: map[string]string{"X-Internal-Token": "s3cret-token", "Authorization": "Bearer abc", "X-Correlation-ID": "c1"},
			Body:    []byte(`{"to":"447700900123","message":{"text":"hi"}}`),
		}},
		LastAttempt: &cloudtaskspb.Attempt{ResponseStatus: &status.Status{Code: int32(codes.Unavailable), Message: "503 Service Unavailable"}},
	}))
	want := map[string]string{"X-Internal-Token": Masked, "Authorization": Masked, "X-Correlation-ID": "c1"}
	if diff := cmp.Diff(want, task.Headers); diff != "" {
		t.Errorf("headers (-want, +got):\n%s", diff)
	}
	if task.ID != "abc-out" || task.Queue != "wa-outbound" || task.Method != "POST" || task.LastAttempt.Status != "503 Service Unavailable" {
		t.Errorf("task = %+v", task)
	}
	var b strings.Builder
	if err := WriteTask(&b, task); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cret-token", "Bearer abc", "447700900123", `"hi"`} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("describe output shows %q:\n%s", secret, b.String())
		}
	}
}

// fakeRecords is the dead letter side of store.Records in memory.
type fakeRecords struct {
	dls      map[string]store.DeadLetter
	outbound map[string]store.OutboundRecord
	reopened []string
}

func (f *fakeRecords) ListDeadLetters(_ context.Context, onlyPending bool, _ int) ([]store.DeadLetter, error) {
	var out []store.DeadLetter
	for _, d := range f.dls {
		if !onlyPending || !d.Replayed {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f *fakeRecords) GetDeadLetter(_ context.Context, id string) (store.DeadLetter, error) {
	d, ok := f.dls[id]
	if !ok {
		return d, store.ErrNotFound
	}
	return d, nil
}

func (f *fakeRecords) GetOutbound(_ context.Context, key string) (store.OutboundRecord, error) {
	r, ok := f.outbound[key]
	if !ok {
		return r, store.ErrNotFound
	}
	return r, nil
}

func (f *fakeRecords) ReopenOutbound(_ context.Context, key string) error {
	f.reopened = append(f.reopened, key)
	if r := f.outbound[key]; r.State == store.OutboundFailed {
		r.State = store.OutboundPending
		f.outbound[key] = r
	}
	return nil
}

func (f *fakeRecords) MarkReplayed(_ context.Context, id string) error {
	d := f.dls[id]
	d.Replayed = true
	f.dls[id] = d
	return nil
}

// fakeQueue answers AlreadyExists for a name seen before, as Cloud Tasks does.
type fakeQueue struct{ tasks map[string]taskqueue.Task }

func (q *fakeQueue) Enqueue(_ context.Context, t taskqueue.Task) (taskqueue.Result, error) {
	name := t.Queue + "/" + t.ID
	if _, ok := q.tasks[name]; ok {
		return taskqueue.Result{Name: name, Existed: true}, nil
	}
	q.tasks[name] = t
	return taskqueue.Result{Name: name}, nil
}

func TestReplay(t *testing.T) {
	t.Parallel()
	now := time.Now()
	keyFailed, keySent := tasks.IdempotencyKey(keyedid.Dev(), "wamid.a"), tasks.IdempotencyKey(keyedid.Dev(), "wamid.b")
	recs := &fakeRecords{
		dls: map[string]store.DeadLetter{
			"dl-failed": {ID: "dl-failed", Queue: "wa-outbound", Path: tasks.ProcessOutboundPath, Body: `{"idempotency_key":"` + keyFailed + `"}`,
				IdempotencyKey: keyFailed, CreatedAt: now.Add(-2 * time.Hour)},
			"dl-sent": {ID: "dl-sent", Path: tasks.ProcessOutboundPath, Body: `{"idempotency_key":"` + keySent + `"}`, CreatedAt: now.Add(-time.Minute)},
			"dl-in":   {ID: "dl-in", Queue: "wa-inbound", Path: tasks.ProcessInboundPath, Body: `{}`, CreatedAt: now},
		},
		outbound: map[string]store.OutboundRecord{
			keyFailed: {IdempotencyKey: keyFailed, State: store.OutboundFailed},
			keySent:   {IdempotencyKey: keySent, State: store.OutboundSent},
		},
	}
	q := &fakeQueue{tasks: map[string]taskqueue.Task{}}
	r := &Replayer{DeadLetters: recs, Outbound: recs, Tasks: q}
	ctx := context.Background()

	sel, err := r.Select(ctx, nil, true, ReplayFilter{Path: "process_outbound", Since: now.Add(-time.Hour)})
	if err != nil || len(sel) != 1 || sel[0].ID != "dl-sent" {
		t.Fatalf("Select(outbound, last hour) = %v, %v; want dl-sent", sel, err)
	}
	if sel, _ := r.Select(ctx, nil, true, ReplayFilter{}); len(sel) != 3 || sel[0].ID != "dl-failed" || sel[2].ID != "dl-in" {
		t.Errorf("Select(all) = %v, want the three, oldest first", sel)
	}
	if _, err := r.Select(ctx, []string{"x"}, true, ReplayFilter{}); err == nil {
		t.Error("Select with ids and all succeeded")
	}

	// A dry run changes nothing.
	res, err := r.Replay(ctx, recs.dls["dl-failed"], true)
	if err != nil || !res.Reopened || len(q.tasks) != 0 || len(recs.reopened) != 0 || recs.dls["dl-failed"].Replayed {
		t.Fatalf("dry run: %+v, %v; %d tasks, reopened %v", res, err, len(q.tasks), recs.reopened)
	}
	// A failed record is reopened, then the task created with the id derived from the dead letter.
	res, err = r.Replay(ctx, recs.dls["dl-failed"], false)
	if err != nil || !res.Reopened || res.Existed || res.RecordState != store.OutboundFailed || !recs.dls["dl-failed"].Replayed {
		t.Fatalf("replay of a failed reply: %+v, %v", res, err)
	}
	task := q.tasks["wa-outbound/"+tasks.ReplayTaskID("dl-failed")]
	if task.Path != tasks.ProcessOutboundPath || !strings.Contains(string(task.Body), keyFailed) {
		t.Errorf("replay task = %+v", task)
	}
	// Again: AlreadyExists, nothing new.
	if res, err := r.Replay(ctx, recs.dls["dl-failed"], false); err != nil || !res.Existed || len(q.tasks) != 1 {
		t.Errorf("second replay: %+v, %v, %d tasks; want the existing task and nothing new", res, err, len(q.tasks))
	}
	// A sent record is never reopened; a dead letter without its queue goes to its route's queue.
	recs.reopened = nil
	if res, err := r.Replay(ctx, recs.dls["dl-sent"], false); err != nil || res.Reopened || len(recs.reopened) != 0 || res.Queue != tasks.OutboundQueueID {
		t.Errorf("replay of a sent reply: %+v, %v, reopened %v", res, err, recs.reopened)
	}
	if res, err := r.Replay(ctx, recs.dls["dl-in"], false); err != nil || res.Queue != tasks.InboundQueueID || res.RecordState != "" {
		t.Errorf("replay of an inbound dead letter: %+v, %v", res, err)
	}
	if _, err := r.Replay(ctx, store.DeadLetter{ID: "bad", Path: "/elsewhere", Body: "{}"}, false); err == nil {
		t.Error("a dead letter of an unknown route was replayed")
	}
}

// TestReplayTenantTasks: the dead letters of an api send (process_send) and of an action
// (process_action) replay to their tenant's send queue, and the failed record of the api send,
// or of the action's result message, is reopened first, as a reply's is.
func TestReplayTenantTasks(t *testing.T) {
	t.Parallel()
	key := tasks.SendKey("msg_0123")
	recs := &fakeRecords{
		dls: map[string]store.DeadLetter{
			"dl-send":   {ID: "dl-send", Path: tasks.ProcessSendPath, Body: `{"idempotency_key":"` + key + `","tenant_id":"acme-bus"}`},
			"dl-action": {ID: "dl-action", Queue: "projects/p/locations/l/queues/" + tasks.TenantQueueID("acme-bus"), Path: tasks.ProcessActionPath, Body: `{"action_id":"a1","tenant_id":"acme-bus"}`},
			"dl-orphan": {ID: "dl-orphan", Path: tasks.ProcessSendPath, Body: `{"idempotency_key":"` + key + `"}`},
			// An action answered before keys were keyed: its result's record has the unkeyed key.
			"dl-action-legacy": {ID: "dl-action-legacy", Queue: tasks.TenantQueueID("acme-bus"), Path: tasks.ProcessActionPath, Body: `{"action_id":"a0","tenant_id":"acme-bus"}`},
		},
		outbound: map[string]store.OutboundRecord{
			key: {IdempotencyKey: key, State: store.OutboundFailed},
			tasks.ActionReplyKey(keyedid.Dev(), "a1"): {IdempotencyKey: tasks.ActionReplyKey(keyedid.Dev(), "a1"), State: store.OutboundFailed},
			tasks.LegacyActionReplyKey("a0"):          {IdempotencyKey: tasks.LegacyActionReplyKey("a0"), State: store.OutboundFailed},
		},
	}
	q := &fakeQueue{tasks: map[string]taskqueue.Task{}}
	r := &Replayer{DeadLetters: recs, Outbound: recs, Tasks: q}
	ctx := context.Background()
	for _, tc := range []struct {
		id         string
		wantReopen string
	}{
		{"dl-send", key},
		{"dl-action", tasks.ActionReplyKey(keyedid.Dev(), "a1")},
		{"dl-action-legacy", tasks.LegacyActionReplyKey("a0")},
	} {
		recs.reopened = nil
		res, err := r.Replay(ctx, recs.dls[tc.id], false)
		if err != nil || res.Queue != tasks.TenantQueueID("acme-bus") || !res.Reopened || !recs.dls[tc.id].Replayed {
			t.Errorf("replay %s: %+v, %v; want queue %s, reopened, marked replayed", tc.id, res, err, tasks.TenantQueueID("acme-bus"))
		}
		if !cmp.Equal(recs.reopened, []string{tc.wantReopen}) {
			t.Errorf("replay %s reopened %v, want the record %s", tc.id, recs.reopened, tc.wantReopen)
		}
		if task, ok := q.tasks[tasks.TenantQueueID("acme-bus")+"/"+tasks.ReplayTaskID(tc.id)]; !ok || task.Path != recs.dls[tc.id].Path {
			t.Errorf("replay %s: task %+v, want one on the tenant's queue to %s", tc.id, task, recs.dls[tc.id].Path)
		}
	}
	if _, err := r.Replay(ctx, recs.dls["dl-orphan"], false); err == nil {
		t.Error("an api send's dead letter with no queue and no tenant_id was replayed")
	}
}

func TestReplayTaskID(t *testing.T) {
	t.Parallel()
	a, b := tasks.ReplayTaskID("dl-1"), tasks.ReplayTaskID("dl-2")
	if a != tasks.ReplayTaskID("dl-1") || a == b || !strings.HasSuffix(a, "-replay") || len(a) != 32+len("-replay") {
		t.Errorf("ReplayTaskID: %q, %q; want deterministic, distinct, hash-prefixed", a, b)
	}
}

// TestBuildDeliveryByUserID: trigger --user-id --no-phone builds a message that names its sender
// by BSUID alone, with the username and profile name given.
func TestBuildDeliveryByUserID(t *testing.T) {
	t.Parallel()
	d, err := BuildDelivery(SampleSpec{Type: "text", Text: "halo", UserID: "US.13491208655302741918", Username: "ana", Name: "Ana", NoPhone: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := whatsapp.Parse(d.Body)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := whatsapp.Normalize(p)
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	if id := msgs[0].Identity(); id != (contact.Identity{UserID: "US.13491208655302741918", Username: "ana", Name: "Ana"}) {
		t.Errorf("sender = %+v; want the BSUID, username and name, no phone", id)
	}
}

func TestBuildDelivery(t *testing.T) {
	t.Parallel()
	for _, typ := range SampleTypes {
		spec := SampleSpec{Type: typ, Count: 4, Status: "read", MessageID: "wamid.target"}
		if typ != "status" && typ != "reaction" && typ != "revoke" && typ != "edit" {
			spec.MessageID = ""
		}
		if typ == "user_changed_user_id" {
			spec.UserID = "US.13491208655302741918" // the BSUID that changes
		}
		d, err := BuildDelivery(spec)
		if err != nil {
			t.Errorf("%s: %v", typ, err)
			continue
		}
		switch typ {
		case "status":
			if d.EventID != "wamid.target:read" || len(d.MessageIDs) != 0 {
				t.Errorf("status: event %s, messages %v", d.EventID, d.MessageIDs)
			}
		case "batch":
			if len(d.MessageIDs) != 4 || d.EventID != d.MessageIDs[0] {
				t.Errorf("batch: event %s, messages %v", d.EventID, d.MessageIDs)
			}
		case "preferences", "echo", "account_update", "calls", "template_status":
			// Other fields: no message; the event id is the body's hash.
			p, _ := whatsapp.Parse(d.Body)
			if len(d.MessageIDs) != 0 || len(d.EventID) != 64 || len(whatsapp.Events(p)) != 1 {
				t.Errorf("%s: event %s, messages %v, events %+v", typ, d.EventID, d.MessageIDs, whatsapp.Events(p))
			}
		default:
			if len(d.MessageIDs) != 1 || d.EventID != d.MessageIDs[0] {
				t.Errorf("%s: event %s, messages %v", typ, d.EventID, d.MessageIDs)
			}
		}
	}
	for _, bad := range []SampleSpec{{Type: "hologram"}, {Type: "status"}, {Type: "status", MessageID: "x", Status: "lost"}, {Type: "batch"},
		{Type: "revoke"}, {Type: "edit"}, {Type: "preferences", Text: "maybe"}, {Type: "system", Text: "+62 812"},
		{Type: "text", NoPhone: true}, {Type: "text", UserID: "6281234567890"}, {Type: "user_changed_user_id"}} {
		if _, err := BuildDelivery(bad); err == nil {
			t.Errorf("BuildDelivery(%+v) succeeded", bad)
		}
	}
}

// TestReplayActsAsTheRoutesEnqueuer: a replay's task acts as its route's own enqueuer
// (Replayer.Invokers, REPLAY_INVOKERS): the worker admits an inbound task only from the webhook's
// invoker, whoever replays it.
func TestReplayActsAsTheRoutesEnqueuer(t *testing.T) {
	t.Parallel()
	recs := &fakeRecords{dls: map[string]store.DeadLetter{
		"dl-in":   {ID: "dl-in", Queue: "wa-inbound", Path: tasks.ProcessInboundPath, Body: `{}`},
		"dl-send": {ID: "dl-send", Path: tasks.ProcessSendPath, Body: `{"idempotency_key":"k","tenant_id":"acme"}`},
	}, outbound: map[string]store.OutboundRecord{}}
	q := &fakeQueue{tasks: map[string]taskqueue.Task{}}
	r := &Replayer{DeadLetters: recs, Outbound: recs, Tasks: q, Invokers: map[string]string{
		tasks.ProcessInboundPath: "inv-webhook@p.iam.gserviceaccount.com", tasks.ProcessSendPath: "inv-console@p.iam.gserviceaccount.com"}}
	for id, want := range map[string]string{"dl-in": "inv-webhook@p.iam.gserviceaccount.com", "dl-send": "inv-console@p.iam.gserviceaccount.com"} {
		res, err := r.Replay(context.Background(), recs.dls[id], false)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.tasks[res.Queue+"/"+tasks.ReplayTaskID(id)].Invoker; got != want {
			t.Errorf("replay of %s acts as %q, want %q", id, got, want)
		}
	}
}
