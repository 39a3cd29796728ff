"""Slack interactivity: signed button presses in a backfill's thread become control documents
(docs/policy.md, "Slack buttons")."""
