"""Stand in for a deployed turnstream stack on a moto server, and report
what is left of it.

  python3 moto_standin.py setup < request.json   # prints JSON: what was made
  python3 moto_standin.py state < request.json   # prints JSON: what exists

The request names the endpoint, the region and the stacks:

    {"endpoint": "http://127.0.0.1:PORT", "region": "eu-west-1",
     "stacks": [{"name": "turnstream", "trustedSubject": "",
                 "outputs": ["TurnFunctionUrl", ...]}]}

setup creates, per stack, what README "Deploy" and "After deploy" read and
delete: a CloudFormation stack with the template's output keys (TableName
names its table, CursorSecretArn a secret made beforehand, the others a
function URL, AttachmentsBucketName its bucket), its
ArtifactsTrustedSubject parameter, three Lambda functions with a log group
each, a table retained on deletion with deletion protection on, a bucket
retained on deletion holding a file, and a change set; it prints the expected output
values, the change set name and the functions. Used by internal/deploytest
(readme_test.go), which runs the README's commands with the AWS CLI against
the same server.
"""

import json
import sys

import boto3

FUNCTIONS = ["TurnFunction", "HistoryFunction", "ArtifactsFunction"]


def client(req, service):
    return boto3.client(
        service,
        endpoint_url=req["endpoint"],
        region_name=req["region"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def template(stack, region, secret_arn, with_tag=False):
    resources = {
        "Role": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
                }
            },
        },
        "Table": {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                ],
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "BillingMode": "PAY_PER_REQUEST",
                "DeletionProtectionEnabled": True,
            },
        },
        "AttachmentsBucket": {
            "Type": "AWS::S3::Bucket",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    }
    if with_tag:
        resources["Table"]["Properties"]["Tags"] = [{"Key": "changed", "Value": "yes"}]
    for fn in FUNCTIONS:
        resources[fn] = {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "provided.al2023",
                "Handler": "bootstrap",
                "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                "Code": {"ZipFile": "stand-in"},
            },
        }
    outputs = {}
    expected = {}
    for key in stack["outputs"]:
        if key == "TableName":
            outputs[key] = {"Value": {"Ref": "Table"}}
        elif key == "AttachmentsBucketName":
            outputs[key] = {"Value": {"Ref": "AttachmentsBucket"}}
        elif key == "CursorSecretArn":
            outputs[key] = {"Value": secret_arn}
            expected[key] = secret_arn
        else:
            value = "https://%s-%s.lambda-url.%s.on.aws/" % (stack["name"], key.lower(), region)
            outputs[key] = {"Value": value}
            expected[key] = value
    body = {
        "Parameters": {"ArtifactsTrustedSubject": {"Type": "String", "Default": ""}},
        "Resources": resources,
        "Outputs": outputs,
    }
    return json.dumps(body), expected


def setup(req):
    cfn = client(req, "cloudformation")
    logs = client(req, "logs")
    sm = client(req, "secretsmanager")
    out = {}
    for stack in req["stacks"]:
        name = stack["name"]
        secret = sm.create_secret(Name="CursorSecret-" + name, SecretString="stand-in")["ARN"]
        body, expected = template(stack, req["region"], secret)
        params = [{"ParameterKey": "ArtifactsTrustedSubject", "ParameterValue": stack["trustedSubject"]}]
        cfn.create_stack(StackName=name, TemplateBody=body, Parameters=params, Capabilities=["CAPABILITY_IAM"])
        cfn.get_waiter("stack_create_complete").wait(StackName=name, WaiterConfig={"Delay": 1})
        resources = cfn.describe_stack_resources(StackName=name)["StackResources"]
        functions = [r["PhysicalResourceId"] for r in resources if r["ResourceType"] == "AWS::Lambda::Function"]
        for fn in functions:
            logs.create_log_group(logGroupName="/aws/lambda/" + fn)
        table = [r["PhysicalResourceId"] for r in resources if r["LogicalResourceId"] == "Table"][0]
        expected["TableName"] = table
        bucket = [r["PhysicalResourceId"] for r in resources if r["LogicalResourceId"] == "AttachmentsBucket"][0]
        expected["AttachmentsBucketName"] = bucket
        client(req, "s3").put_object(Bucket=bucket, Key="attachments/owner/session/att_X", Body=b"a file")
        changed, _ = template(stack, req["region"], secret, with_tag=True)
        cs = cfn.create_change_set(StackName=name, ChangeSetName="samcli-deploy-standin", TemplateBody=changed,
                                   Parameters=params, Capabilities=["CAPABILITY_IAM"])
        out[name] = {"outputs": expected, "functions": functions, "changeSet": cs["Id"]}
    json.dump(out, sys.stdout)


def state(req):
    cfn = client(req, "cloudformation")
    logs = client(req, "logs")
    ddb = client(req, "dynamodb")
    iam = client(req, "iam")
    stacks = [s["StackName"] for s in cfn.list_stacks()["StackSummaries"] if s["StackStatus"] != "DELETE_COMPLETE"]
    groups = [g["logGroupName"] for g in logs.describe_log_groups(logGroupNamePrefix="/aws/lambda/")["logGroups"]]
    backups = [b["TableName"] + "/" + b["BackupName"] for b in ddb.list_backups()["BackupSummaries"]]
    policies = [p["PolicyName"] for p in iam.list_policies(Scope="Local")["Policies"]]
    buckets = [b["Name"] for b in client(req, "s3").list_buckets()["Buckets"]]
    json.dump({"stacks": stacks, "logGroups": groups, "tables": ddb.list_tables()["TableNames"],
               "backups": backups, "policies": policies, "buckets": buckets}, sys.stdout)


if __name__ == "__main__":
    request = json.load(sys.stdin)
    {"setup": setup, "state": state}[sys.argv[1]](request)
