"""Metrics from the store's tables: per-job throughput and file sharing, the workload's
characterization, scaling, comparisons across runs and sites."""
