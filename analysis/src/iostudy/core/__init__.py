"""Configuration, provenance, units and safe file access: what every layer above uses."""
