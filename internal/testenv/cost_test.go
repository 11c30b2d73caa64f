package testenv

import (
	"math"
	"testing"
)

func TestPerThousand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ops  MessageOps
		want USD
	}{
		{"nothing costs nothing", MessageOps{}, USD{}},
		// 1,000 messages × 100 reads = 100,000 reads: exactly one price unit of each kind.
		{"firestore reads", MessageOps{FirestoreReads: 100}, USD{Firestore: 0.03}},
		{"firestore writes", MessageOps{FirestoreWrites: 100}, USD{Firestore: 0.09}},
		{"firestore deletes", MessageOps{FirestoreDeletes: 100}, USD{Firestore: 0.01}},
		{"firestore all three", MessageOps{FirestoreReads: 3, FirestoreWrites: 5, FirestoreDeletes: 1}, USD{Firestore: (3*0.03 + 5*0.09 + 0.01) / 100}},
		// 1,000 × 1,000 = a million operations.
		{"tasks", MessageOps{TasksOps: 1000}, USD{Tasks: 0.40}},
		{"run requests", MessageOps{RunRequests: 1000}, USD{Run: 0.40}},
		// 1,000 × 1 s = 1,000 vCPU-s and 500 GiB-s.
		{"run cpu and memory", MessageOps{CPUSeconds: 1}, USD{Run: 1000*0.000024 + 500*0.0000025}},
		{"llm", MessageOps{LLMInputTokens: 1000, LLMOutputTokens: 1000}, USD{LLM: 0.30 + 2.50}},
		{"a text turn", MessageOps{FirestoreReads: 10, FirestoreWrites: 10, TasksOps: 8, RunRequests: 8, CPUSeconds: 0.01, LLMInputTokens: 800, LLMOutputTokens: 40},
			USD{Firestore: 0.003 + 0.009, Tasks: 0.0032, Run: 0.00024 + 0.0000125 + 0.0032, LLM: 0.24 + 0.1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PerThousand(tc.ops)
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"firestore", got.Firestore, tc.want.Firestore}, {"tasks", got.Tasks, tc.want.Tasks},
				{"run", got.Run, tc.want.Run}, {"llm", got.LLM, tc.want.LLM}, {"total", got.Total(), tc.want.Total()}} {
				if math.Abs(f.got-f.want) > 1e-9 {
					t.Errorf("%s = %.10f, want %.10f", f.name, f.got, f.want)
				}
			}
		})
	}
}
