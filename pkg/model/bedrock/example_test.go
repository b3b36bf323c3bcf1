package bedrock_test

import (
	"context"
	"log"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/bedrock"
)

// A main builds the Bedrock Runtime client once, from the process's AWS
// configuration (on Lambda: the function role and AWS_REGION).
func ExampleNew() {
	ctx := context.Background()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var m model.Model = bedrock.New(bedrockruntime.NewFromConfig(awsCfg))
	_ = m // pass to the turn handler
}
