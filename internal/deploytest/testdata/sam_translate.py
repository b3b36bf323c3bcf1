"""Translate a SAM template into CloudFormation, once per parameter set.

Reads one JSON object on stdin:

    {"template": "<path of template.yaml>", "region": "us-east-1",
     "codeUri": "s3://bucket/key",
     "parameterSets": {"<name>": {"<Parameter>": "<value>", ...}, ...}}

and writes one JSON object on stdout:

    {"samtranslator": "<version>", "templates": {"<name>": {<CloudFormation>}, ...}}

It runs aws-sam-translator (the transform CloudFormation applies to
"Transform: AWS::Serverless-2016-10-31", and the one cfn-lint and SAM CLI
use) as a deployment does: `sam deploy` uploads each function's code and
replaces its local CodeUri with the S3 location (codeUri stands in for it),
then CloudFormation translates the template with the stack's parameter
values. Used by internal/deploytest (translate_test.go); a missing module
exits with status 3 and a message naming it.
"""

import json
import os
import sys


def main():
    request = json.load(sys.stdin)
    # The translator builds ARNs for the region boto3 resolves.
    os.environ["AWS_DEFAULT_REGION"] = request["region"]
    try:
        import samtranslator
        from samtranslator.parser import parser
        from samtranslator.translator.translator import Translator
        from samtranslator.yaml_helper import yaml_parse
    except ImportError as e:
        print("sam_translate.py: %s (pip install aws-sam-translator)" % e, file=sys.stderr)
        sys.exit(3)

    with open(request["template"]) as f:
        source = f.read()
    out = {"samtranslator": samtranslator.__version__, "templates": {}}
    for name, params in request["parameterSets"].items():
        template = yaml_parse(source)
        for resource in template.get("Resources", {}).values():
            if resource.get("Type") == "AWS::Serverless::Function":
                resource["Properties"]["CodeUri"] = request["codeUri"]
        translator = Translator(managed_policy_map={}, sam_parser=parser.Parser())
        out["templates"][name] = translator.translate(
            sam_template=template, parameter_values=dict(params), passthrough_metadata=True
        )
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
