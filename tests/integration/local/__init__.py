"""Integration tests of the local launcher (a real tritonserver from nvidia-pytriton)."""
