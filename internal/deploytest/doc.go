// Package deploytest checks the SAM template (template.yaml) against the
// code it deploys: the environment each function's pkg/config reads, the
// table layout the DynamoDB store creates, each function's DynamoDB actions
// and function URL mode (docs/design.md §1, §5, §9). It holds tests only.
package deploytest
