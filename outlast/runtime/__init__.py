"""The worker side: claiming runs, executing them, leases, waits, budgets and effects."""
