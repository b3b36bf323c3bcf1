package echo_test

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
)

// TestConformance runs the shared model conformance suite against the
// echo model: it must accept every history the suite sends and answer it
// with its echo of the last user message (it writes no scripted output).
func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(*testing.T, ...modeltest.Reply) model.Model { return echo.New(0, 3) },
		Expect: func(req model.Request, _ modeltest.Reply) modeltest.Reply {
			last, _ := model.LastUserContent(req.Messages)
			return modeltest.Reply{Text: echo.Prefix + last}
		},
	})
}
