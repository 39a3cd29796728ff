"""What tests share: fakes, harnesses, sample documents and the template's AWS resources. Test
modules import helpers from here, never from another test module; fixtures stay in conftest.py.

- `configs`: the repository's paths and the sample configs
- `aws`: DynamoDB tables built from template.yaml (`backfill_local.template_tables`)
- `lambda_context`: the one fake Lambda context of the three functions
- `trigger`: the trigger's harness (moto and the local doubles), its S3 events and configs
- `moto_server`: a `moto_server` process, for tests that run several containers at once
- `replay`: the replay function's archive, tables, queues, SQS events and flaky SQS
- `policy`: a deployment policy document
- `preflight`: the example catalog and plans on the Marquez double's sample
- `lineage`: an OpenLineage client double
- `imports`: the package's import graph
- `sam`, `wheel`: `sam build` and the project's wheel for the slow template and install tests
"""
