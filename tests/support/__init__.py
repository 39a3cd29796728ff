"""What tests share: fakes, harnesses, sample configs and the template's AWS resources. Test
modules import helpers from here, never from another test module; fixtures stay in conftest.py.

- `configs`: the repository's paths and the sample configs
- `aws`: DynamoDB tables built from template.yaml (`backfill_local.template_tables`)
- `lambda_context`: one fake Lambda context for the three functions
- `trigger`: the trigger's harness (moto and the local doubles) and its S3 events
- `replay`: the replay function's archive, queues, tables and SQS events
- `slack`: the Slack interactivity function's deployment and signed requests
"""
