package console

import (
	"log/slog"

	"github.com/wapipe/wapipe/internal/console/inbox"
	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/console/tenants"
	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// NewDeps builds the console's dependencies on Firestore and Cloud Tasks: the health report as
// the worker computes it, the stores, the replay and inspect of the wapipe CLI, operators'
// replies through the outbox and, with PUBLIC_BASE_URL and a keeper, Embedded Signup links.
func NewDeps(cfg *Config, db *store.DB, tq *taskqueue.Client, admin *taskqueue.Admin, keeper *secrets.Keeper, logger *slog.Logger) Deps {
	outbound := store.NewOutbound(db, store.Options{})
	deadLetters := store.NewDeadLetters(db, store.Options{})
	hasher := cfg.Hasher()
	tenantStore := store.NewTenants(db, store.Options{})
	guard := store.NewGuard(db, store.Options{})
	conversations := store.NewConversationStore(db, store.Options{})
	var links tenants.LinkMaker = NotAvailable{}
	if keeper != nil && cfg.PublicBaseURL != "" {
		links = tenants.SignupLinks{Sealer: keeper, Keyer: db.Keyer(), PublicBaseURL: cfg.PublicBaseURL}
	}
	return Deps{
		// The report the worker serves: queues, sends, dead letters, reauth, quota and restricted accounts.
		Health:        health.ForStore(db, admin, []string{admin.QueuePath(cfg.InboundQueue), admin.QueuePath(cfg.OutboundQueue)}),
		Sends:         outbound,
		Tenants:       tenantStore,
		Usage:         guard,
		Queues:        admin,
		Conversations: conversations,
		Actions:       store.NewActionStore(db, store.Options{}),
		Preferences:   store.NewContactPrefs(db, store.Options{}),
		Contacts:      page.StoreContacts{Contacts: store.NewContacts(db, store.Options{}), Conversations: conversations},
		Keyer:         db.Keyer(),
		Templates:     store.NewTemplates(db, store.Options{}),
		Outbound:      outbound,
		DeadLetters:   deadLetters,
		Replayer: &operator.Replayer{DeadLetters: deadLetters, Outbound: outbound, Tasks: tq, Keyer: db.Keyer(),
			Invokers: cfg.ReplayInvokers},
		Inspector: &operator.Inspector{
			Markers:     store.NewMarkers(db, store.MarkerOptions{EventRef: hasher.Ref}),
			Traces:      store.NewTraces(db, store.Options{}),
			Outbound:    outbound,
			Statuses:    store.NewStatuses(db, store.Options{}),
			DeadLetters: deadLetters,
			Tasks:       admin,
			Hasher:      hasher,
			Keyer:       db.Keyer(),
			Conn: operator.Conn{Project: cfg.ProjectID, Location: cfg.TasksLocation, TasksEmulatorHost: cfg.TasksEmulatorHost,
				FirestoreDatabase: cfg.FirestoreDatabase},
			InboundQueue: cfg.InboundQueue, OutboundQueue: cfg.OutboundQueue,
		},
		Audit:   store.NewAudit(db, store.Options{}),
		APIKeys: store.NewAPIKeys(db, store.Options{}),
		Members: tenantStore,
		Replier: inbox.OutboxReplier{
			Outbox: &outbox.Outbox{Tenants: tenantStore, Sends: store.NewSends(db, store.Options{}), Windows: conversations,
				Tasks: tq, Hasher: hasher},
			Messages: conversations,
		},
		LinkMaker: links,
		Logger:    logger,
		Hasher:    hasher,
		Identity:  cfg.Authenticator(IdentityKeys{}),
		Hosts:     cfg.HostPolicy(),
	}
}
