"""The store: run directories ingested into Parquet tables under one committed catalog, queried
with DuckDB; bundles exported to and imported from other sites."""
