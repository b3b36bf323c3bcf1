package openai_test

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
)

// TestConformance runs the shared model conformance suite against the
// provider and a fake chat completions server that enforces the API's
// tool message rules.
func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		ModelID:  modeltest.OpenAIModelID,
		Scripted: true,
		New: func(t *testing.T, replies ...modeltest.Reply) model.Model {
			return modeltest.NewOpenAI(t, replies...).Model()
		},
	})
}
