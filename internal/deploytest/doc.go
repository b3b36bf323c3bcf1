// Package deploytest checks the SAM template (template.yaml) against the
// code it deploys and against AWS's own tools (docs/design.md#the-three-functions,
// docs/design.md#storage-one-dynamodb-table, docs/design.md#configuration,
// docs/design.md#running-it). It holds tests only.
//
// TestTemplate evaluates the template under a set of deployments
// (parameter sets) and compares it with the code: the environment each
// function's pkg/config reads, the table layout the DynamoDB store
// creates, each function's DynamoDB actions, its Bedrock and secret
// grants, its function URL's mode and CORS. TestSAMTranslation runs the
// SAM translator (aws-sam-translator, the transform CloudFormation
// applies) on the template under the same parameter sets and checks the
// CloudFormation it makes: function URLs, Lambda permissions, each
// function's environment and role, and that cfn-lint finds nothing in it.
// The Python tools are skipped loudly when missing, and fail the run
// under CI=true. TestTableLayoutRecorded holds the table's layout (key
// schema and indexes, which an update cannot change without replacing the
// table) to testdata/table-layouts.json: a new layout must be recorded
// there with the migration users run (docs/design.md#storage-one-dynamodb-table).
//
// TestREADMEDeployCommands and TestREADMEDeploy hold docs/deploy.md's
// "Deploy" and "After deploy" sections to what they say: every shell
// block is marked as run or not run (with the reason), commands name
// their region and use only variables set before them, parameter values
// are ones the template accepts, samconfig.toml deploys the template's
// defaults; the blocks marked run are run with the AWS CLI against moto's
// server standing in for AWS (testdata/moto_standin.py), and what they
// did is checked.
package deploytest
