"""Integration tests against real engines: Slurm, prometheus-node-exporter, Prometheus' promtool, systemd's unit
checker, node-problem-detector's protocol, and LBNL NHC's check conventions (a stand-in driver: nhc_driver.sh)."""
