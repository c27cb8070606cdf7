"""The scheduling core: pure functions and classes, no I/O (mirrors pkg/controllers/provisioning/scheduling)."""
