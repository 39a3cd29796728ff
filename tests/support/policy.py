"""A deployment policy (docs/policy.md) the policy, approval and Slack tests share: people with
Slack users and AWS roles, three grants, and approval thresholds."""

POLICY_YAML = """\
version: 1
people:
  jane:
    slack_user: U0JANE
    aws: ["role/data-eng/jane.doe@example.com"]
  bob:
    slack_user: U0BOB
  ana:
    slack_user: U0ANA
grants:
  - name: data-eng
    members: [jane, bob]
    aws: ["role/data-eng"]
    permissions: [submit, approve, cancel, retry]
    jobs: ["food_delivery/*"]
  - name: analytics-owners
    members: [ana]
    permissions: [approve]
    jobs: ["analytics/*"]
  - name: viewers
    slack_users: [U0VIEW]
    permissions: [cancel]
    jobs: ["marketing/*"]
downstream_outside_scope: approve
approval:
  max_partitions: 100
  max_downstream_jobs: 3
  max_estimated_cost_usd: 50
  max_bytes: 1000
  production_namespaces: ["*_prod"]
  expires_after_hours: 24
"""
