// Command minimal is turnbench's baseline bootstrap: the smallest Go
// Lambda function serving a function URL (aws-lambda-go's lambda.Start
// with a handler that answers 200 with an empty JSON object). turnbench
// builds it with the same release flags as the three functions and runs
// it under aws-lambda-rie the same way, so their cold starts, sizes and
// peak memory sit beside what the Go runtime and the Lambda runtime
// client cost on their own.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		return events.LambdaFunctionURLResponse{
			StatusCode: 200,
			Headers:    map[string]string{"Content-Type": "application/json"},
			Body:       "{}",
		}, nil
	})
}
