"""Infrastructure as code from a plan: Terraform / CloudFormation exports and the
least-privilege execution-role policy. Pure functions of a `Plan`; no AWS calls."""
