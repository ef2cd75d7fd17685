"""Dagster orchestration of the sdc-dagster engine: survey and grid asset chains, checks, automation."""
