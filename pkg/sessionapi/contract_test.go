package sessionapi_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
)

// TestDomainTypesEncodeAsTheContract: the ledger's counters and the
// definitions' quotas, which the servers encode directly, encode to the
// members pkg/api declares for them, in the same order, so that the one
// declaration of the usage body and of the capabilities' quotas holds.
func TestDomainTypesEncodeAsTheContract(t *testing.T) {
	for name, tc := range map[string]struct{ domain, wire any }{
		"counters": {chat.Counters{}, api.UsageCounters{}},
		"quotas": {
			chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 1, TokensPerDay: 2, TokensPerMonth: 3, ConcurrentSessions: 4}},
			api.Quotas{Principal: api.QuotaLimits{TurnsPerMinute: 1, TokensPerDay: 2, TokensPerMonth: 3, ConcurrentSessions: 4}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := json.Marshal(tc.domain)
			if err != nil {
				t.Fatal(err)
			}
			w, err := json.Marshal(tc.wire)
			if err != nil {
				t.Fatal(err)
			}
			if string(d) != string(w) {
				t.Errorf("%s encodes as\n%s\nbut %s declares\n%s", reflect.TypeOf(tc.domain), d, reflect.TypeOf(tc.wire), w)
			}
		})
	}
}
