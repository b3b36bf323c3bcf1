package engine

import (
	"encoding/json"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
)

// TestStopAnswersAreTheContract: the stop route's two 202 bodies, written
// from constants, are api.StopAnswer's encodings.
func TestStopAnswersAreTheContract(t *testing.T) {
	for want, body := range map[api.StopAnswer][]byte{
		{StopRequested: true}:                  stopAccepted,
		{StopRequested: true, Cancelled: true}: queuedCancelled,
	} {
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if string(b)+"\n" != string(body) {
			t.Errorf("the route writes %q, api.StopAnswer %+v encodes as %s", body, want, b)
		}
	}
}
