package bedrock_test

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
)

// TestConformance runs the shared model conformance suite against the
// provider and a fake ConverseStream server that enforces Converse's
// validation rules.
func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		ModelID:  modeltest.BedrockModelID,
		Scripted: true,
		New: func(t *testing.T, replies ...modeltest.Reply) model.Model {
			return modeltest.NewBedrock(t, replies...).Model()
		},
	})
}
