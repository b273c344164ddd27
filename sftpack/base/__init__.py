"""What every layer shares: errors, safe YAML, lazy registry references, file hashing, the package version."""
