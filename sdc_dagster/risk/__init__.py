"""Disclosure-risk measures (SPEC §2–§5). Public names follow ../CONTRACT.md."""
