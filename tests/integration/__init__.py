"""Integration tests against real engines: Slurm, prometheus-node-exporter, node-problem-detector's protocol."""
