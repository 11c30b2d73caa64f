package testenv

// The cost of a message on Google Cloud: the operations one message takes (MessageOps, counted by
// OpCounter, CPUTime and the task counts of a benchmark) priced at list prices held here as
// constants, so a benchmark's counts become dollars per 1,000 messages.
//
// The prices are the public list prices for us-central1 (the project's region) as the author
// knew them in July 2025, from these pages:
//
//   - Firestore:  https://cloud.google.com/firestore/pricing (Native mode, Standard edition)
//   - Cloud Tasks: https://cloud.google.com/tasks/pricing
//   - Cloud Run:  https://cloud.google.com/run/pricing (request-based billing, tier 1)
//
// The model's token prices are not here: they are the rate card's (pricing/model_prices.csv),
// which the ledger prices calls with.
//
// They were not checked against the live pages when written: check them before quoting a
// figure. Free tiers (Firestore's daily 50,000 reads and 20,000 writes and deletes, Cloud
// Tasks' first million operations a month, Cloud Run's monthly 180,000 vCPU-seconds) are left
// out: the figures are the marginal cost of a message once a deployment is past them.

import (
	"sync"
	"time"

	"github.com/wapipe/wapipe/pricing"
)

// PricesAsOf is the date the prices below refer to.
const PricesAsOf = "2025-07"

// List prices in US dollars.
const (
	// Firestore Native mode, us-central1, per 100,000 documents.
	FirestoreReadsPer100K   = 0.03
	FirestoreWritesPer100K  = 0.09
	FirestoreDeletesPer100K = 0.01
	// Cloud Tasks, per million billable operations (API calls and push delivery attempts)
	// after the first million of the month.
	TasksOpsPerMillion = 0.40
	// Cloud Run request-based billing, tier 1 region: per vCPU-second and GiB-second of an
	// instance while it handles requests, and per million requests.
	RunVCPUSecond     = 0.000024
	RunGiBSecond      = 0.0000025
	RunRequestsPerMil = 0.40
)

// geminiFlash is Gemini 2.5 Flash's price of one token of kind (prompt, output: thinking tokens
// included) in USD, from the rate card in pricing/, the prices' one home.
var geminiFlash = sync.OnceValue(func() map[string]float64 {
	card, err := pricing.Load()
	if err != nil {
		panic("testenv: " + err.Error())
	}
	out := map[string]float64{}
	for _, kind := range []string{"prompt", "output"} {
		p, _ := card.TokenPrice("gemini-2.5-flash", kind, time.Now())
		out[kind] = float64(p) / 1e12
	}
	return out
})

// RunGiBPerVCPU is the memory billed with each vCPU-second: the services' defaults in
// terraform/variables.tf (cpu "1", memory "512Mi").
const RunGiBPerVCPU = 0.5

// MessageOps are the billable operations of one message (or averages over many).
type MessageOps struct {
	FirestoreReads, FirestoreWrites, FirestoreDeletes float64
	// TasksOps counts Cloud Tasks' billable operations: task creations and delivery attempts.
	TasksOps float64
	// RunRequests counts the requests the Cloud Run services handle: webhook posts and task
	// deliveries.
	RunRequests float64
	// CPUSeconds is the services' CPU time. Request-based billing charges an instance's whole
	// active time, shared by its concurrent requests, so this is the floor a busy instance
	// approaches, not what an idle one pays.
	CPUSeconds float64
	// LLMInputTokens and LLMOutputTokens are Gemini's token counts.
	LLMInputTokens, LLMOutputTokens float64
}

// USD is a cost in US dollars by service.
type USD struct {
	Firestore, Tasks, Run, LLM float64
}

// Total is the sum over the services.
func (u USD) Total() float64 { return u.Firestore + u.Tasks + u.Run + u.LLM }

// Price prices o at the list prices.
func Price(o MessageOps) USD {
	return USD{
		Firestore: o.FirestoreReads*FirestoreReadsPer100K/1e5 + o.FirestoreWrites*FirestoreWritesPer100K/1e5 +
			o.FirestoreDeletes*FirestoreDeletesPer100K/1e5,
		Tasks: o.TasksOps * TasksOpsPerMillion / 1e6,
		Run: o.CPUSeconds*RunVCPUSecond + o.CPUSeconds*RunGiBPerVCPU*RunGiBSecond +
			o.RunRequests*RunRequestsPerMil/1e6,
		LLM: o.LLMInputTokens*geminiFlash()["prompt"] + o.LLMOutputTokens*geminiFlash()["output"],
	}
}

// PerThousand is the cost of 1,000 messages that each take perMessage.
func PerThousand(perMessage MessageOps) USD {
	u := Price(perMessage)
	return USD{Firestore: u.Firestore * 1000, Tasks: u.Tasks * 1000, Run: u.Run * 1000, LLM: u.LLM * 1000}
}
