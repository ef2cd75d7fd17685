"""Information-loss measures (SPEC §9, §10). Public names follow ../CONTRACT.md."""
